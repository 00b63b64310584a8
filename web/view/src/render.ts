// Renders a run snapshot into the page: header, totals, the plan tree, and once the run has ended the
// report with citations that open onto their verified quotes, confidence, gaps, follow-ups, sources.

import { type LinkMaker, markdown } from "./markdown";
import type { RunView, ViewFact, ViewNode, ViewResult, ViewSource, ViewTotals } from "./snapshot";

export interface Links {
  open?: (url: string) => void; // the host opens links (ui/open-link) when it can
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function seconds(value: number): string {
  return value < 90 ? `${value.toFixed(1)} s` : `${Math.floor(value / 60)} min ${Math.round(value % 60)} s`;
}

function totals(t: ViewTotals): HTMLElement {
  const item = (name: string, key: string, value: string) =>
    el("div", { class: "total", "data-total": key }, el("dt", {}, name), el("dd", {}, value));
  return el(
    "dl",
    { class: "totals" },
    item("Plan nodes", "nodes", `${t.nodes_done}/${t.nodes_total}`),
    item("Sources read", "sources", String(t.sources)),
    item("Facts verified", "facts", `${t.facts_verified}/${t.facts}`),
    item("Tokens", "tokens", t.tokens.toLocaleString("en")),
    item("Cost", "cost", `$${t.cost_usd.toFixed(4)}`),
    item("Elapsed", "elapsed", seconds(t.elapsed_s)),
  );
}

function node(n: ViewNode): HTMLElement {
  const li = el(
    "li",
    { "data-node": n.id, "data-state": n.state },
    el("span", { class: `state state-${n.state}` }, n.state),
    " ",
    el("span", { class: "kind" }, n.kind),
    " ",
    el("span", { class: "title" }, n.title || n.id),
  );
  if (n.questions.length) li.append(el("div", { class: "questions muted" }, n.questions.join(" · ")));
  if (n.children.length) li.append(el("ul", {}, ...n.children.map(node)));
  return li;
}

function plan(snapshot: RunView): HTMLElement {
  const section = el("section", { "aria-labelledby": "plan-h" }, el("h2", { id: "plan-h" }, "Plan"));
  for (const tree of snapshot.plan) {
    section.append(el("ul", { class: "tree", "data-plan": tree.plan_id }, node(tree.root)));
  }
  return section;
}

function sourceLine(source: ViewSource | undefined, id: string, links: Links): HTMLElement {
  if (!source) return el("span", {}, id);
  const span = el("span", { class: "source-ref" }, el("b", {}, source.id), " ", source.title || source.url_or_path);
  if (isWeb(source.url_or_path) && links.open) {
    const open = links.open;
    const button = el("button", { type: "button", class: "link" }, source.url_or_path);
    button.addEventListener("click", () => open(source.url_or_path));
    span.append(" ", button);
  } else if (source.url_or_path !== source.title) {
    span.append(" ", el("span", { class: "muted url" }, source.url_or_path));
  }
  return span;
}

// The address of a link as the run's sources are compared with it, as the server's citation check
// does: no trailing punctuation, fragment or slash, and case folded.
function linkKey(url: string): string {
  return url.trim().replace(/[.,;:!?]+$/, "").replace(/#.*$/, "").replace(/\/+$/, "").toLowerCase();
}

// A link in the report may open only a web source of this run (http or https), through the host, and
// opens that source's own address; any other address (javascript:, data:, a page the run never read)
// stays plain text.
function reportLinks(sources: ViewSource[], links: Links): LinkMaker {
  const web = new Map(sources.filter((s) => isWeb(s.url_or_path)).map((s) => [linkKey(s.url_or_path), s.url_or_path]));
  return (url, label) => {
    const address = isWeb(url) ? web.get(linkKey(url)) : undefined;
    if (address === undefined) return document.createTextNode(label);
    if (!links.open) return el("span", {}, label, " ", el("span", { class: "muted url" }, `(${address})`));
    const open = links.open;
    const button = el("button", { type: "button", class: "link", "data-href": address, title: address }, label);
    button.addEventListener("click", () => open(address));
    return button;
  };
}

function isWeb(url: string): boolean {
  return /^https?:\/\/[^\s]+$/i.test(url.trim());
}

function quotePanel(fact: ViewFact | undefined, id: string, sources: Map<string, ViewSource>, links: Links): HTMLElement {
  const panel = el("div", { class: "quote", id: "quote", role: "note", "aria-label": `Citation ${id}` });
  if (!fact) {
    panel.append(el("p", {}, `${id} is not among this run's facts.`));
    return panel;
  }
  panel.append(
    el("p", { class: "statement" }, el("b", {}, fact.id), " ", fact.statement),
    el("blockquote", {}, fact.quote),
    el(
      "p",
      { class: fact.verified ? "verified" : "unverified" },
      fact.verified ? "✓ quote found in the source" : "✗ quote NOT found in the source (unverified)",
      fact.corroborations > 1 ? ` · corroborated by ${fact.corroborations} sources` : "",
    ),
    el("p", { class: "from" }, "Source: ", sourceLine(sources.get(fact.source_id), fact.source_id, links)),
  );
  for (const other of fact.also_in) {
    panel.append(
      el("p", { class: "also" }, "Also in ", sourceLine(sources.get(other.source_id), other.source_id, links), ": "),
      el("blockquote", {}, other.quote),
    );
  }
  return panel;
}

function report(result: ViewResult, links: Links): HTMLElement {
  const facts = new Map(result.facts.map((f) => [f.id, f]));
  const sources = new Map(result.sources.map((s) => [s.id, s]));
  let counter = 0;
  const cite = (id: string, label: string): Node => {
    const button = el("button", {
      type: "button",
      class: facts.get(id)?.verified === false ? "cite unverified" : "cite",
      "data-fact": id,
      "aria-expanded": "false",
      "aria-label": `Citation ${id}: show its quote and source`,
      id: `cite-${id}-${++counter}`,
    }, label);
    button.addEventListener("click", () => toggle(button, id));
    return button;
  };
  const toggle = (button: HTMLButtonElement, id: string) => {
    const open = document.getElementById("quote");
    const wasOpen = button.getAttribute("aria-expanded") === "true";
    open?.remove();
    body.querySelectorAll('button.cite[aria-expanded="true"]').forEach((b) => b.setAttribute("aria-expanded", "false"));
    if (wasOpen) return;
    const panel = quotePanel(facts.get(id), id, sources, links);
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        panel.remove();
        button.setAttribute("aria-expanded", "false");
        button.focus();
      }
    });
    button.setAttribute("aria-expanded", "true");
    button.setAttribute("aria-controls", "quote");
    // Beside the citation's block; after its whole table when it sits in a cell.
    const block = button.closest(".table-wrap, p, li, h2, h3, h4, h5, h6");
    if (block && block.tagName === "LI") block.append(panel);
    else (block ?? button).after(panel);
  };
  const body = el("div", { class: "findings" });
  body.append(markdown(result.findings, cite, reportLinks(result.sources, links)));
  body.addEventListener("keydown", (event) => {
    if (event.key === "Escape") document.getElementById("quote")?.remove();
  });

  const section = el("section", { "aria-labelledby": "report-h" }, el("h2", { id: "report-h" }, "Report"), body);
  section.append(
    el("h3", {}, "Confidence"),
    el("p", { class: `confidence level-${result.confidence.level}` }, el("b", {}, result.confidence.level), " — ", result.confidence.reasoning),
  );
  if (result.gaps.length) section.append(el("h3", {}, "Gaps"), el("ul", { class: "gaps" }, ...result.gaps.map((g) => el("li", {}, g))));
  if (result.suggested_followups.length) {
    section.append(
      el("h3", {}, "Follow-ups"),
      el("ul", { class: "followups" }, ...result.suggested_followups.map((f) => el("li", {}, f))),
    );
  }
  section.append(
    el("h3", {}, "Sources"),
    el(
      "ul",
      { class: "sources" },
      ...result.sources.map((s) =>
        el(
          "li",
          { "data-source": s.id },
          sourceLine(s, s.id, links),
          " ",
          ...[s.kind, ...s.tags].filter(Boolean).map((tag) => el("span", { class: "tag" }, tag)),
          s.relevance !== null ? el("span", { class: "muted" }, ` relevance ${s.relevance}`) : "",
        ),
      ),
    ),
  );
  return section;
}

export function render(root: HTMLElement, snapshot: RunView, links: Links, refreshing: boolean): void {
  const { run } = snapshot;
  const header = el(
    "header",
    {},
    el("h1", {}, run.query || run.id),
    el(
      "p",
      { class: "status-line" },
      el("span", { class: `badge status-${run.status}`, id: "status" }, run.status),
      " ",
      el("span", { class: "muted" }, `${run.id} · ${run.backend || "backend not chosen yet"}`),
      refreshing ? el("span", { class: "muted live" }, " · live") : "",
    ),
  );
  if (run.error) header.append(el("p", { class: "error" }, run.error));
  const parts: Node[] = [header, totals(snapshot.totals), plan(snapshot)];
  // Keep an open citation open across refreshes only when nothing changed: a finished run stops refreshing.
  if (snapshot.result) parts.push(report(snapshot.result, links));
  root.replaceChildren(...parts);
}

export function message(root: HTMLElement, text: string, error = false): void {
  root.replaceChildren(el("p", { class: error ? "error" : "muted", id: "message" }, text));
}

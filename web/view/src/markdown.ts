// A small Markdown renderer that builds DOM nodes (never HTML strings), so nothing a source or a model
// wrote can become markup. Headings, paragraphs, lists, tables, emphasis, code, links and citations
// [F12]. A link is handed to the caller's LinkMaker, which decides what it may become (the run view
// opens only the run's own http(s) sources); no href is ever written into the page.

export type CiteMaker = (factId: string, label: string) => Node;
export type LinkMaker = (url: string, label: string) => Node;

// A link's address may hold one level of parentheses (https://en.wikipedia.org/wiki/Kelp_(alga)).
const INLINE =
  /(?<link>\[(?<label>[^\]\n]+)\]\((?<url>(?:[^\s()]|\([^\s()]*\))+)\))|(?<cite>\[F\d+(?:, unverified)?\])|(?<strong>\*\*[^*]+\*\*)|(?<em>\*[^*\s][^*]*\*|(?<![\w])_[^_\s][^_]*_(?![\w]))|(?<code>`[^`]+`)/g;

// Without a LinkMaker a link is its label: nothing is followed.
const asText: LinkMaker = (_url, label) => document.createTextNode(label);

export function inline(text: string, cite: CiteMaker, link: LinkMaker = asText): Node[] {
  const nodes: Node[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const at = match.index ?? 0;
    if (at > last) nodes.push(document.createTextNode(text.slice(last, at)));
    const token = match[0];
    const groups = match.groups ?? {};
    if (groups.link) {
      nodes.push(link(groups.url, groups.label));
    } else if (groups.cite) {
      const id = token.slice(1, token.indexOf(",") > 0 ? token.indexOf(",") : -1);
      nodes.push(cite(id, token));
    } else if (groups.strong) {
      const strong = document.createElement("strong");
      strong.append(...inline(token.slice(2, -2), cite, link));
      nodes.push(strong);
    } else if (groups.em) {
      const em = document.createElement("em");
      em.append(...inline(token.slice(1, -1), cite, link));
      nodes.push(em);
    } else {
      const code = document.createElement("code");
      code.textContent = token.slice(1, -1);
      nodes.push(code);
    }
    last = at + token.length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

// A table's delimiter row: | --- | :---: | ---: | (the outer pipes optional).
const DELIMITER = /^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$/;

function cells(line: string): string[] {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function table(rows: string[], cite: CiteMaker, link: LinkMaker): HTMLElement {
  const header = cells(rows[0]);
  const align = cells(rows[1]).map((spec) =>
    spec.startsWith(":") && spec.endsWith(":") ? "center" : spec.endsWith(":") ? "right" : "",
  );
  const row = (values: string[], tag: "th" | "td") => {
    const tr = document.createElement("tr");
    header.forEach((_, index) => {
      const cell = document.createElement(tag);
      if (tag === "th") cell.setAttribute("scope", "col");
      if (align[index]) cell.style.textAlign = align[index];
      cell.append(...inline(values[index] ?? "", cite, link));
      tr.append(cell);
    });
    return tr;
  };
  const element = document.createElement("table");
  const head = document.createElement("thead");
  head.append(row(header, "th"));
  const body = document.createElement("tbody");
  for (const line of rows.slice(2)) body.append(row(cells(line), "td"));
  element.append(head, body);
  const wrap = document.createElement("div"); // a wide table scrolls inside the report, not the view
  wrap.className = "table-wrap";
  wrap.append(element);
  return wrap;
}

export function markdown(source: string, cite: CiteMaker, link: LinkMaker = asText): DocumentFragment {
  const out = document.createDocumentFragment();
  let list: HTMLElement | null = null;
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length) {
      const p = document.createElement("p");
      p.append(...inline(paragraph.join(" "), cite, link));
      out.append(p);
      paragraph = [];
    }
  };
  const lines = source.split("\n");
  for (let at = 0; at < lines.length; at++) {
    const line = lines[at].trim();
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (!line) {
      flush();
      list = null;
    } else if (line.includes("|") && (lines[at + 1] ?? "").includes("|") && DELIMITER.test(lines[at + 1].trim())) {
      flush();
      list = null;
      const rows = [line, lines[at + 1].trim()];
      at += 2;
      while (at < lines.length && lines[at].trim() && lines[at].includes("|")) rows.push(lines[at++].trim());
      at -= 1;
      out.append(table(rows, cite, link));
    } else if (heading) {
      flush();
      list = null;
      // The view's own title is h1; report headings start one level below it.
      const h = document.createElement(`h${Math.min(6, heading[1].length + 1)}`);
      h.append(...inline(heading[2], cite, link));
      out.append(h);
    } else if (bullet) {
      flush();
      const tag = bullet[1] ? "OL" : "UL";
      if (!list || list.tagName !== tag) {
        list = document.createElement(tag.toLowerCase());
        out.append(list);
      }
      const li = document.createElement("li");
      li.append(...inline(bullet[2], cite, link));
      list.append(li);
    } else {
      list = null;
      paragraph.push(line);
    }
  }
  flush();
  return out;
}

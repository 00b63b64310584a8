// A small Markdown renderer that builds DOM nodes (never HTML strings), so nothing a source or a model
// wrote can become markup. Headings, paragraphs, lists, emphasis, code, and citations [F12].

export type CiteMaker = (factId: string, label: string) => Node;

const INLINE = /(\[F\d+(?:, unverified)?\])|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|(?<![\w])_[^_\s][^_]*_(?![\w]))|(`[^`]+`)/g;

export function inline(text: string, cite: CiteMaker): Node[] {
  const nodes: Node[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const at = match.index ?? 0;
    if (at > last) nodes.push(document.createTextNode(text.slice(last, at)));
    const token = match[0];
    if (match[1]) {
      const id = token.slice(1, token.indexOf(",") > 0 ? token.indexOf(",") : -1);
      nodes.push(cite(id, token));
    } else if (match[2]) {
      const strong = document.createElement("strong");
      strong.append(...inline(token.slice(2, -2), cite));
      nodes.push(strong);
    } else if (match[3]) {
      const em = document.createElement("em");
      em.append(...inline(token.slice(1, -1), cite));
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

export function markdown(source: string, cite: CiteMaker): DocumentFragment {
  const out = document.createDocumentFragment();
  let list: HTMLElement | null = null;
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length) {
      const p = document.createElement("p");
      p.append(...inline(paragraph.join(" "), cite));
      out.append(p);
      paragraph = [];
    }
  };
  for (const raw of source.split("\n")) {
    const line = raw.trim();
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (!line) {
      flush();
      list = null;
    } else if (heading) {
      flush();
      list = null;
      // The view's own title is h1; report headings start one level below it.
      const h = document.createElement(`h${Math.min(6, heading[1].length + 1)}`);
      h.append(...inline(heading[2], cite));
      out.append(h);
    } else if (bullet) {
      flush();
      const tag = bullet[1] ? "OL" : "UL";
      if (!list || list.tagName !== tag) {
        list = document.createElement(tag.toLowerCase());
        out.append(list);
      }
      const li = document.createElement("li");
      li.append(...inline(bullet[2], cite));
      list.append(li);
    } else {
      list = null;
      paragraph.push(line);
    }
  }
  flush();
  return out;
}

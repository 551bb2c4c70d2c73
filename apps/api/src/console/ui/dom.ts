/// <reference lib="dom" />

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | boolean | number | undefined | ((event: Event) => void)>;

/**
 * Builds an element. Text is always set as text (never parsed as HTML): whatever the API returns, ids and
 * problem details included, cannot become markup or script on the page.
 */
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(parent: HTMLElement, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces what `parent` shows. */
export function show(parent: HTMLElement, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

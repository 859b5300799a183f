// Parse Mermaid diagrams with Mermaid itself.
// stdin: a JSON array of diagram sources; stdout: a JSON array of
// {ok, type} or {ok: false, error}, one per diagram, in order.
// Mermaid's sanitizer (DOMPurify) needs a window: jsdom provides one.
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const source of JSON.parse(input)) {
  try {
    const result = await mermaid.parse(source);
    out.push({ ok: true, type: result.diagramType });
  } catch (e) {
    out.push({ ok: false, error: String((e && e.message) || e) });
  }
}
process.stdout.write(JSON.stringify(out));

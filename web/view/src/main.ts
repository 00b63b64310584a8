// The run view: an MCP App (ext-apps `App` speaks the host bridge). It learns the run from the
// execute_plan / report_results call it is attached to, then reads the run through the app-only tool
// `run_view` — every few seconds while the run goes on, once when it has ended. What it reads through
// the host never enters the model's context.

import {
  App,
  applyDocumentTheme,
  applyHostFonts,
  applyHostStyleVariables,
  type McpUiHostContext,
} from "@modelcontextprotocol/ext-apps";
import { message, render } from "./render";
import type { RunView } from "./snapshot";

const REFRESH_MS = 1500;
const root = document.getElementById("view") as HTMLElement;
const app = new App({ name: "research-mcp run view", version: "1.0.0" }, {});

let runId: string | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;

function applyContext(context: McpUiHostContext | undefined): void {
  if (!context) return;
  if (context.theme) applyDocumentTheme(context.theme);
  if (context.styles?.variables) applyHostStyleVariables(context.styles.variables);
  if (context.styles?.css?.fonts) applyHostFonts(context.styles.css.fonts);
}

function runIdIn(value: unknown): string | null {
  if (typeof value === "string" && /^run_[A-Za-z0-9]+$/.test(value)) return value;
  return null;
}

async function refresh(): Promise<void> {
  if (!runId) return;
  const id = runId;
  let finished = true;
  try {
    const result = await app.callServerTool({ name: "run_view", arguments: { run_id: id } });
    if (id !== runId) return; // a newer run replaced this one while the call was out
    const snapshot = result.structuredContent as RunView | undefined;
    if (result.isError || !snapshot) {
      const text = result.content?.find((c) => c.type === "text");
      message(root, text && "text" in text ? String(text.text) : `Could not read run ${id}.`, true);
    } else {
      finished = snapshot.finished;
      const canOpen = app.getHostCapabilities()?.openLinks !== undefined;
      render(root, snapshot, canOpen ? { open: (url) => void app.openLink({ url }) } : {}, !finished);
    }
  } catch (error) {
    message(root, `Could not reach the server: ${String(error)}`, true);
  }
  clearTimeout(timer);
  if (!finished && id === runId) timer = setTimeout(() => void refresh(), REFRESH_MS);
}

function show(id: string | null, what: string): void {
  if (!id) {
    if (!runId) message(root, `This view shows research runs; ${what} is not one.`);
    return;
  }
  if (id === runId) return;
  runId = id;
  clearTimeout(timer);
  message(root, `Reading run ${id}…`);
  void refresh();
}

app.ontoolinput = (params) => {
  const args = params.arguments ?? {};
  const id = runIdIn(args.run_id) ?? runIdIn(args.id);
  if (id) show(id, id);
};
app.ontoolresult = (result) => {
  const structured = result.structuredContent as { id?: unknown } | undefined;
  show(runIdIn(structured?.id), String(structured?.id ?? "this result"));
};
app.onhostcontextchanged = applyContext;
app.onteardown = async () => {
  clearTimeout(timer);
  runId = null;
  return {};
};

await app.connect();
applyContext(app.getHostContext());

// The TypeScript SDK's client against `research-mcp serve` over stdio: it validates every
// structuredContent against the tool's outputSchema (callTool throws on a mismatch). Prints one JSON
// line: the tools listed and each call made. Run by tests/server/test_conformance.py.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args: ["serve"], env: process.env, stderr: "ignore" });
const client = new Client({ name: "research-mcp-ts-check", version: "1.0.0" });
await client.connect(transport);

const calls = [];
async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  calls.push(name);
  return result.structuredContent;
}

const tools = (await client.listTools()).tools;
const text = "Emperor penguins breed in the Antarctic winter. Adelie penguins breed in the summer.";
const plan = await call("plan_research", {
  query: "When do penguins breed?",
  suggested_plan: [
    { parent: null, kind: "executor", title: "penguins" },
    { parent: 0, kind: "leaf", title: "breeding", questions: ["When do penguins breed?"], sources: [text] },
  ],
});
const run = await call("execute_plan", { plan_id: plan.id, wait_seconds: 30 });
for (const view of ["summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree"]) {
  await call("report_results", { id: run.id, view });
}
const extraction = await call("extract_source", { source: text, questions: ["When do penguins breed?"] });
await call("report_results", { id: extraction.id, view: "handoff" });
await call("scout_sources", { topic: "penguin breeding" });
await client.close();
console.log(JSON.stringify({ tools: tools.map((t) => t.name), typed: tools.every((t) => t.outputSchema?.properties), status: run.status, calls }));

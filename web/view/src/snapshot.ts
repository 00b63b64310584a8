// The shape of what the app-only tool `run_view` returns (live_snapshot in research_mcp/run_document.py).

export interface PlanNode {
  id: string;
  kind: string;
  title: string;
  state: string;
  questions: string[];
  children: PlanNode[];
}

export interface PlanTree {
  plan_id: string;
  query: string;
  root: PlanNode;
}

export interface Totals {
  nodes_done: number;
  nodes_total: number;
  sources: number;
  facts: number;
  facts_verified: number;
  tokens: number;
  cost_usd: number;
  elapsed_s: number;
}

export interface Fact {
  id: string;
  statement: string;
  quote: string;
  verified: boolean;
  source_id: string;
  corroborations: number;
  also_in: { source_id: string; quote: string }[];
}

export interface Source {
  id: string;
  url_or_path: string;
  title: string;
  kind: string;
  relevance: number | null;
  tags: string[];
}

export interface RunResult {
  findings: string;
  facts: Fact[];
  sources: Source[];
  confidence: { level: string; reasoning: string };
  gaps: string[];
  suggested_followups: string[];
}

export interface RunSnapshot {
  run: { id: string; status: string; query: string; backend: string; error: string | null };
  finished: boolean;
  totals: Totals;
  plan: PlanTree[];
  result: RunResult | null;
}

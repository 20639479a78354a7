// The shapes of the HTTP API's answers, as far as the dashboard reads
// them. Type checking only: nothing here is served or embedded.
//
// Fields follow the server's JSON (its OpenAPI document at /openapi.json
// has every field): a field the server always sends is required here, one
// it leaves out when empty is optional, and lists are sent empty, never
// null, unless a type says so. The dashboard ships inside the server's
// binary, so it never talks to a server of another version.
//
// A module uses them with a JSDoc import, and states the shape it expects
// from the API helpers (get, post... return what they are assigned to):
//   /** @import { RunInfo } from '../../../types/api' */
//   /** @type {RunInfo} */
//   const info = await get(`/api/run/${seg(id)}`);

/** The statuses of a run. */
export type RunStatus = 'running' | 'completed' | 'stopped' | 'interrupted' | 'aborted';

/** The statuses of one test's result. */
export type TestStatus = 'passed' | 'failed' | 'error';

/** The statuses of a matrix cell. */
export type CellStatus = 'pending' | 'running' | 'passed' | 'failed' | 'error' | 'partial' | 'skipped';

/** What a run ran with (run_info.config). */
export interface RunConfig {
  model: string;
  /** The model endpoint, without credentials. */
  base_url: string;
  concurrency: number;
  timeout_s: number;
  retries: number;
  repeats: number;
  params: Record<string, unknown> | null;
  definitions_hash: string;
  gauntlet_version: string;
  /** Identical model requests were answered from the response cache. */
  cache: boolean;
  /** The agent the run evaluated; absent for a run of the bare model. */
  agent_id?: string;
  /** That agent's definition when the run started. */
  agent?: RunAgent;
}

/** The definition of the agent a run evaluated (run_info.config.agent). */
export interface RunAgent {
  id: string;
  name: string;
  system_prompt: string;
  /** Null: the configured model. */
  model: string | null;
  tools: string[];
  /** Each knowledge-base file with a hash of its text. */
  knowledge_base: { file: string; sha256: string; bytes: number }[];
}

/** A run's summary: run_info of GET /api/run/{id}, an entry of GET /api/history. */
export interface RunInfo {
  run_id: string;
  started_at: string;
  completed_at: string | null;
  /** The run's label. */
  model_name: string;
  /** The endpoint model the run used. */
  model: string;
  status: RunStatus;
  /** Mean over the scored tests; null when none was scored. */
  overall_score: number | null;
  total_tokens: number;
  total_duration_ms: number;
  total_tests: number;
  /** Tests finished: passed + failed + errors. */
  done_tests: number;
  passed: number;
  failed: number;
  errors: number;
  /** True only when completed, every test finished and none in error. */
  complete: boolean;
  /** Why the run stopped, when something other than a user stopped it. */
  error?: string;
  domains: string[];
  /** Null for runs made before it was recorded. */
  config: RunConfig | null;
  /** Model requests answered from the response cache. */
  cache_hits: number;
  /** The run this one rescored; empty for a run that asked the model. */
  rescored_from: string;
  /** How often and when (UTC, oldest first) the run was resumed. */
  resumed: { count: number; at: string[] };
}

/** GET /api/history. */
export interface HistoryPage {
  runs: RunInfo[];
  total: number;
  limit: number;
  offset: number;
}

/** One domain × level entry of a matrix. */
export interface Cell {
  status: CellStatus;
  /** Mean over the scored tests; null when none was scored. */
  score: number | null;
  duration_ms?: number;
  tests: number;
  done: number;
  passed: number;
  failed: number;
  errors: number;
  /** Standard error of score; null until the cell is final or when nothing was scored. */
  stderr: number | null;
  /** 95 % interval of score, [low, high]; null as stderr is. */
  ci95: [number, number] | null;
  /** Recall@k and hit rate of an agent's retrieval; absent when no result measured it. */
  retrieval?: CellRetrieval;
  /** What the cell's results cost in US dollars, judges included; null when none had a price. */
  cost_usd?: number | null;
  /** The judges' part of cost_usd. */
  judge_cost_usd?: number | null;
}

/** A cell's retrieval figures, over its scored results with details.retrieval. */
export interface CellRetrieval {
  recall_at_k: number;
  hit_rate: number;
  tests: number;
}

/** A result's details.retrieval: how an agent's retrieval did on the test's expected sources. */
export interface ResultRetrieval {
  k: number;
  expected: string[];
  /** The distinct files of the best k chunks, best first. */
  retrieved: string[];
  recall_at_k: number;
  hit: boolean;
  mode: string;
  fallback?: string;
}

/** Cells by domain id, then by level (a number as a key). */
export type Matrix = Record<string, Record<string, Cell>>;

/** GET /api/test_matrix and GET /api/run/{id}/matrix. */
export interface LiveMatrix {
  domains: Matrix;
  run_id: string | null;
  model_name: string | null;
  /** The run's status, or idle when there has been no run. */
  status: RunStatus | 'idle';
}

/** GET /api/status. */
export interface EngineStatus {
  status: 'idle' | 'running';
  run_id: string | null;
  current_domain: string | null;
  current_level: number | null;
  /** Tests finished. */
  progress: number;
  total_tests: number;
  model_name: string | null;
  last_run_id: string | null;
  /** The active run is being prepared and has started no test. */
  preparing: boolean;
  /** The model client's rate-limit state, by provider. */
  rate_limit: Record<string, RateLimitState>;
}

/** A provider's rate-limit state (GET /api/status rate_limit). */
export interface RateLimitState {
  /** Requests allowed in flight now; 0: no bound. */
  concurrency: number;
  /** The most it grows back to; 0: no bound. */
  concurrency_max: number;
  /** Rate limited, and the concurrency has not grown back yet. */
  throttled: boolean;
  /** Seconds waited out in all. */
  waiting_s: number;
}

/** GET /api/log_poll. */
export interface LogPoll {
  messages: string[];
  is_running: boolean;
  /** The since of the next poll. */
  cursor: number;
}

/** A test's expected answer. */
export interface Expected {
  type: string;
  answer: string;
  tolerance?: number | null;
  arguments?: Record<string, unknown>;
  /** Knowledge-base files an agent's retrieval should find. */
  sources?: string[];
}

/** A function call the model made during a test (details.tool_calls). */
export interface ToolCallRecord {
  id?: string;
  name: string;
  arguments: unknown;
  output?: unknown;
}

/**
 * An evaluator's details of a result. The regex evaluator's keys are
 * named; other evaluators may add any.
 */
export interface ResultDetails {
  extracted_answer?: unknown;
  pass2_used?: boolean;
  pass2_response?: unknown;
  tool_calls?: unknown;
  error?: unknown;
  expected_type?: string;
  reason?: unknown;
  retrieval?: ResultRetrieval;
  [key: string]: unknown;
}

/** One test's result. */
export interface TestResult {
  run_id: string;
  test_id: string;
  /** Which asking of the test, from 0 (runs with repeats ask each test several times). */
  repeat: number;
  domain: string;
  level: number;
  name: string;
  prompt: string;
  response: string;
  response_base64?: string;
  expected: Expected;
  score: number;
  status: TestStatus;
  details: ResultDetails | null;
  duration_ms: number;
  model_name: string;
  system_prompt: string;
  prompt_tokens: number;
  completion_tokens: number;
  /** What the result's calls cost in US dollars, its judge's included; null when its model has no price. */
  cost_usd?: number | null;
  /** The judge's part of cost_usd; null when none had a price. */
  judge_cost_usd?: number | null;
  created_at: string;
  /**
   * Every message exchanged for the test, in order, the second pass
   * marked. Results stored before transcripts were kept have the system
   * prompt, the prompt and the response only.
   */
  transcript: TranscriptMessage[];
  /** Each attempt of each model request, in the order they started. */
  calls: ModelCall[];
}

/** A function call of an assistant message in a transcript. */
export interface TranscriptToolCall {
  id: string;
  name: string;
  /** JSON arguments as the model sent them. */
  arguments: string;
}

/** One message of a result's transcript. */
export interface TranscriptMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** The exact bytes of content, base64, when they are not valid UTF-8. */
  content_base64?: string;
  tool_calls?: TranscriptToolCall[];
  /** The call a tool message answers. */
  tool_call_id?: string;
  /** Part of the evaluator's second pass (request and reply). */
  pass2: boolean;
  /** Content or arguments cut to fit the stored transcript's cap. */
  truncated: boolean;
  /** Messages left out just before this one. */
  omitted?: number;
}

export type ModelCallPurpose = 'test' | 'tool_round' | 'pass2' | 'judge';
export type ModelCallStatus = 'ok' | 'cached' | 'http_error' | 'timeout' | 'unreachable' | 'too_large' | 'malformed' | 'cancelled' | 'error';

/** One attempt of one model request made for a result. */
export interface ModelCall {
  purpose: ModelCallPurpose;
  /** The tool-loop request, from 0; 0 for pass2 and judge. */
  round: number;
  /** 1 for a request's first attempt, one more per retry. */
  attempt: number;
  /** When the attempt began, from the start of the test. */
  start_ms: number;
  duration_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  status: ModelCallStatus;
  http_status?: number;
  error?: string;
}

/**
 * One test of a run over its repeats. Results in error are not among its
 * k: they say nothing about the model. The figures are null when k is 0.
 */
export interface TestAggregate {
  test_id: string;
  domain: string;
  level: number;
  name: string;
  /** Finished results: passed + failed + errors. */
  samples: number;
  /** Scored results: passed + failed. */
  k: number;
  passed: number;
  failed: number;
  errors: number;
  /** Mean score of the scored results. */
  score: number | null;
  /** passed / k. */
  pass_rate: number | null;
  /** Passed at least once in k. */
  pass_at_k: boolean | null;
  /** Passed every one of k (pass^k). */
  pass_all_k: boolean | null;
}

/** GET /api/run/{id}/results: one page of a run's results. */
export interface ResultPage {
  /** At most limit results, in the order asked. */
  results: TestResult[];
  /** Results the filters select, on every page. */
  total: number;
  /** The cursor of the next page; null on the last page. */
  next_cursor: string | null;
}

/** GET /api/run/{id}/tests/{domain}/{level}. */
export interface CellTests {
  run_id: string;
  domain: string;
  level: number;
  tests: TestResult[];
  /** Each test of the cell over its repeats. */
  aggregates: TestAggregate[];
}

/** GET /api/run/{id}. */
export interface RunDetails {
  run_info: RunInfo;
  stats: {
    status_counts: Record<string, number>;
    avg_score: number;
    total_tests: number;
  };
  test_results: TestResult[];
  /** Each test of the run over its repeats. */
  aggregates: TestAggregate[];
}

/** POST /api/start. */
export interface StartResult {
  success: boolean;
  message: string;
  run_id: string;
}

/** POST /api/run/{id}/rescore. */
export interface RescoreResult {
  run_id: string;
}

/** POST /api/stop, /api/reset, /api/run/{id}/resume. */
export interface MessageResult {
  success: boolean;
  message: string;
  run_id?: string;
}

/** GET /api/config. */
export interface ServerConfig {
  llm_base_url: string;
  llm_model: string;
  debug: boolean;
}

/** GET /api/config/model. */
export interface ModelStatus {
  /** The model the endpoint serves; null when it did not answer. */
  model: string | null;
  config_model: string;
  available?: string[];
  /** Why model is null. */
  detail?: string;
}

// ---- Definitions ----

export interface Domain {
  id: string;
  name: string;
  description: string;
  evaluator_id: string;
  enabled: boolean;
  system_prompt: string;
  icon: string;
  color: string;
}

export type PromptMode = 'append' | 'prepend' | 'replace';

/** GET /api/settings/levels/{domain}/{level}. */
export interface LevelConfig {
  domain_id: string;
  level: number;
  system_prompt: string;
  system_prompt_mode: PromptMode;
  pass_threshold: number;
  tools: string[];
}

/** A test definition. */
export interface Test {
  id: string;
  domain_id: string;
  level: number;
  name: string;
  prompt: string;
  expected: Expected;
  evaluator_id: string;
  tools: string[];
}

export interface Evaluator {
  id: string;
  name: string;
  description: string;
  type: string;
  extraction_regex: string;
  uses_pass2: boolean;
  config?: Record<string, unknown>;
}

export interface Tool {
  id: string;
  name: string;
  description: string;
  function: {
    name: string;
    description: string;
    parameters?: Record<string, unknown>;
  };
  mock_response?: unknown;
}

/** Counts of each kind of definition. */
export interface DefinitionCounts {
  domains: number;
  levels: number;
  tests: number;
  evaluators: number;
  tools: number;
}

/** A definition file that did not load. */
export interface FileError {
  file: string;
  /** From 1; absent when the error is not on one line. */
  line?: number;
  key?: string;
  error: string;
}

/** GET and POST /api/settings/sync. */
export interface SyncResult {
  success: boolean;
  loaded: DefinitionCounts;
  errors: FileError[];
}

/** POST /api/settings/import. */
export interface ImportResult {
  success: boolean;
  merge: boolean;
  imported: DefinitionCounts;
  total: DefinitionCounts;
}

/** GET /api/settings/export: every definition. */
export interface Snapshot {
  domains: Domain[];
  levels: LevelConfig[];
  tests: Test[];
  evaluators: Evaluator[];
  tools: Tool[];
}

// ---- Black-box targets ----

export interface Target {
  id: string;
  description?: string;
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body: unknown;
  response: { answer: string; tool_calls?: string; sources?: string };
  signature?: { header: string; secret: string };
}

// ---- Agents ----

export interface Agent {
  id: string;
  name: string;
  description: string;
  system_prompt: string;
  /** Null: the configured model. */
  model: string | null;
  created_at: string;
}

export type ChannelStatus = 'running' | 'stopped' | 'error';

export interface Channel {
  id: string;
  agent_id: string;
  /** telegram, webhook, or a channel plugin's type. */
  type: string;
  name: string;
  /** Secrets come back masked. */
  config: Record<string, unknown>;
  status: ChannelStatus;
  last_error: string;
  created_at: string;
}

/** GET /api/agents/{id}: the agent with its tools and channels. */
export interface AgentDetail extends Agent {
  tools: string[];
  channels: Channel[];
}

/** POST /api/agents/{id}/channels/{channel}/start and /stop. */
export interface ChannelAction extends Channel {
  success: boolean;
}

/** A knowledge-base file. */
export interface KBFile {
  filename: string;
  size: number;
  /** Unix time, in seconds. */
  modified: number;
  content?: string;
}

/** GET /api/agents/{id}/kb/{file}. */
export interface KBContent {
  filename: string;
  content: string;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** POST /api/agents/{id}/chat. */
export interface ChatReply {
  success: boolean;
  response: string;
  session_id: string;
  tool_calls: ToolCallRecord[] | null;
  usage: Usage;
  tool_rounds_exceeded?: boolean;
  /** The knowledge-base chunks given to the model, best first; [] when the base gave nothing. */
  sources: Source[];
  /** How sources were found; null when the knowledge base gave nothing. */
  retrieval: RetrievalInfo | null;
}

/** A knowledge-base chunk given to the model for a reply. */
export interface Source {
  file: string;
  /** The chunk's number in its file, from 0 (the model sees part chunk+1). */
  chunk: number;
  /** BM25 or fused score; 0 for a chunk given only because the whole base fits. */
  score: number;
}

/** How a reply's sources were found. */
export interface RetrievalInfo {
  mode: 'bm25' | 'hybrid';
  /** Why retrieval meant to be hybrid was BM25 only; absent when it was not. */
  fallback?: string;
}

/** A chunk found by GET /api/agents/{id}/kb/search. */
export interface KBSearchHit {
  file: string;
  chunk: number;
  /** The chunk's text: untrusted, shown as text. */
  text: string;
  score: number;
  /** Place in the BM25 ranking, from 1; null when unranked there. */
  bm25_rank: number | null;
  /** Place in the embeddings' ranking, from 1; null without embeddings. */
  vector_rank: number | null;
}

/** GET /api/agents/{id}/kb/search. */
export interface KBSearch {
  results: KBSearchHit[];
  mode: 'bm25' | 'hybrid';
  fallback?: string;
}

/** One entry of GET /api/agents/{id}/conversations. */
export interface ConversationSummary {
  user_id: string;
  /** How many messages are stored. */
  messages: number;
  updated_at: string;
  /**
   * The type of the channel the latest message came through (telegram,
   * webhook, a plugin's); null for a chat through the API. Messages stored
   * before channels were recorded: the type the user id names by its
   * prefix, else null.
   */
  channel: string | null;
  /** The id of that channel's record (perhaps deleted since); null for the API or when not recorded. */
  channel_id: string | null;
  last_role: 'user' | 'assistant' | 'tool';
  /** The last message's first 200 characters. */
  last_message: string;
  last_message_truncated: boolean;
}

/** GET /api/agents/{id}/conversations. */
export interface ConversationList {
  conversations: ConversationSummary[];
  total: number;
}

/** A tool call of an assistant message of a conversation. */
export interface MessageToolCall {
  id: string;
  name: string;
  /** The JSON arguments as the model wrote them. */
  arguments: string;
}

/** One stored message of a conversation. */
export interface ConversationMessage {
  id: number;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: MessageToolCall[];
  /** For a tool message: the call it answers. */
  tool_call_id?: string;
  created_at: string;
  /** The channel the message came through, as in ConversationSummary. */
  channel: string | null;
  channel_id: string | null;
  /** On a turn's reply: the chunks the model was given ([] for none); null on other messages and older replies. */
  sources: Source[] | null;
  /** On a reply: how its sources were found; null otherwise. */
  retrieval: RetrievalInfo | null;
}

/** GET /api/agents/{id}/conversations/{user_id}. */
export interface Conversation {
  user_id: string;
  /** The channel of the conversation's latest message, whatever the page. */
  channel: string | null;
  channel_id: string | null;
  /** Oldest first. */
  messages: ConversationMessage[];
  total: number;
  /** The before that reads the older messages; null when none are left. */
  next_before: number | null;
}

// ---- Errors ----

/** One entry of a problem's errors: where and what. */
export interface ErrorDetail {
  /** Where the error is, as body.expected.answer. */
  location?: string;
  message?: string;
  value?: unknown;
}

/** An RFC 9457 problem+json answer. */
export interface Problem {
  status?: number;
  title?: string;
  detail?: string;
  type?: string;
  instance?: string;
  errors?: ErrorDetail[] | null;
  success?: boolean;
}

/** One domain × level cell of GET /api/compare: the tests both runs answered there. */
export interface CompareCell {
  /** Mean score of the paired tests in the base run, 0–1. */
  base_score: number;
  /** Mean score of the paired tests in the head run, 0–1. */
  head_score: number;
  /** head_score − base_score. */
  delta: number;
  /** 95 % interval of the change, [low, high]; it contains delta. */
  ci95: [number, number];
  /** Two-sided p-value of "both runs score the same". */
  p_value: number;
  /** p_value below 0.05. */
  significant: boolean;
  /** Tests paired in this cell. */
  tests: number;
  /** How an agent's retrieval changed: absent unless paired tests that name expected sources measured it in both runs. */
  retrieval?: CompareRetrieval;
}

/** A test that passed in one run and failed in the other. */
/** How an agent's retrieval changed in a cell of GET /api/compare. */
export interface CompareRetrieval {
  /** Mean recall@k of those tests in the base run, 0–1. */
  base_recall_at_k: number;
  /** Mean recall@k of those tests in the head run, 0–1. */
  head_recall_at_k: number;
  /** head_recall_at_k − base_recall_at_k. */
  delta: number;
  /** Share of those tests that retrieved an expected file in the base run. */
  base_hit_rate: number;
  /** The same in the head run. */
  head_hit_rate: number;
  /** Paired tests (by test id and repeat) that measured retrieval in both runs, scored in both. */
  tests: number;
}

export interface CompareFlip {
  test_id: string;
  /** Which asking of the test, from 0 (runs with repeats pair the same asking). */
  repeat: number;
  domain: string;
  level: number;
  base_status: 'passed' | 'failed';
  head_status: 'passed' | 'failed';
}

/** Counts over every compared cell of GET /api/compare. */
export interface CompareSummary {
  /** Paired tests whose score went up. */
  improved: number;
  /** Paired tests whose score went down. */
  regressed: number;
  /** Paired tests whose score stayed the same. */
  unchanged: number;
  /** Cells whose score went down significantly. */
  significant_regressions: number;
  /** Cells whose score went up significantly. */
  significant_improvements: number;
}

/** GET /api/compare?base=…&head=…: two runs compared test by test. */
export interface Comparison {
  base: string;
  head: string;
  /** Domain id → level (a string of digits) → comparison; only cells with a paired test. */
  cells: Record<string, Record<string, CompareCell>>;
  flipped: CompareFlip[];
  summary: CompareSummary;
}

/** POST /api/sweep: the sweep started, one run per model in this order. */
export interface SweepStarted {
  sweep_id: string;
  models: string[];
}

/** GET /api/sweep: the current or last sweep. */
export interface Sweep {
  sweep_id: string;
  status: 'running' | 'completed' | 'stopped';
  models: string[];
  /** The runs started so far: run_ids[i] is the run of models[i]. */
  run_ids: string[];
  /** The model whose run is in progress; null once the sweep is over. */
  current: string | null;
  /** Why the sweep stopped, when a run could not start. */
  error?: string;
}

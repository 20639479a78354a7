// Compiled by .ci/openapi-check (tsc --strict) against the types
// openapi-typescript generates from the server's OpenAPI document, next to
// this file as api.d.ts. Each @ts-expect-error line must fail to compile:
// if the schemas became loose again (open objects, optional required
// fields, string instead of an enumeration), tsc reports the directive as
// unused and the check fails.
import type { components, paths } from "./api";

type Schemas = components["schemas"];

// Request bodies are closed: a misspelled field is an error.
export const create: Schemas["DomainCreate"] = { id: "d1", name: "D" };
// @ts-expect-error nmae is not a field of DomainCreate.
export const typo: Schemas["DomainCreate"] = { id: "d1", nmae: "D" };
// @ts-expect-error name is required on creation.
export const noName: Schemas["DomainCreate"] = { id: "d1" };
// An update needs no field.
export const rename: Schemas["DomainUpdate"] = {};

// Fields a PUT clears are cleared with null.
export const noTolerance: Schemas["TestUpdate"] = { expected: { tolerance: null, arguments: null } };
export const noMock: Schemas["ToolUpdate"] = { mock_response: null };
export const defaultModel: Schemas["AgentUpdate"] = { model: null };
// @ts-expect-error a name cannot be cleared.
export const noDomainName: Schemas["DomainUpdate"] = { name: null };

// Responses carry every required field, and nothing else.
export const domain: Schemas["Domain"] = {
  id: "d1", name: "D", description: "", evaluator_id: "", enabled: true, system_prompt: "", icon: "", color: "",
};
// @ts-expect-error a Domain always has enabled.
export const partial: Schemas["Domain"] = { id: "d1", name: "D", description: "", evaluator_id: "", system_prompt: "", icon: "", color: "" };
export function label(d: Schemas["Domain"]): string {
  return `${d.name} (${d.id})${d.enabled ? "" : ", disabled"}`;
}

// Enumerations are the same type wherever they appear.
export const mode: Schemas["LevelUpdate"]["system_prompt_mode"] = "prepend";
export const sameMode: Schemas["Level"]["system_prompt_mode"] = mode;
// @ts-expect-error sideways is not a mode.
export const badMode: Schemas["SystemPromptMode"] = "sideways";

// A run's config may be null; its score too.
export function score(r: Schemas["RunInfo"]): string {
  const config = r.config === null ? "no config" : `${r.config.concurrency} at once`;
  return `${r.status}: ${r.overall_score ?? "no score"} (${config})`;
}

// Operations: typed answers, errors included.
type Started = paths["/api/start"]["post"]["responses"][200]["content"]["application/json"];
export const started: Started = { success: true, run_id: "r1", message: "evaluation started" };
type Busy = paths["/api/start"]["post"]["responses"][409]["content"]["application/problem+json"];
export const busy: Busy = { status: 409, title: "Conflict", detail: "a run is active", success: false };
// @ts-expect-error success is always false on a problem.
export const notAProblem: Busy = { status: 409, title: "Conflict", detail: "x", success: true };
type NoRun = paths["/api/v1/history/last/id"]["get"]["responses"][404]["content"]["application/problem+json"];
export const noRun: NoRun = busy;
type Uploaded = paths["/api/agents/{agent_id}/kb"]["post"]["responses"][201]["content"]["application/json"];
export const uploaded: Uploaded = { filename: "faq.md", size: 120, modified: 1764000000.5 };
type Queued = paths["/api/channels/{channel_id}/webhook"]["post"]["responses"][202]["content"]["application/json"];
export const queued: Queued = { success: true, queued: true, request_id: "1f2e" };

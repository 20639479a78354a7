// The dashboard's only way to the server: the public HTTP API, with the
// API token (if any) from local storage, problem+json errors turned into
// APIError, and network failures reported to whoever listens.

const TOKEN_KEY = 'gauntlet.apiToken';

/** An error answer of the API: RFC 9457 problem+json. */
export class APIError extends Error {
  constructor(status, problem) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.name = 'APIError';
    this.status = status;
    this.problem = problem || {};
    /** @type {{location?: string, message?: string}[]} */
    this.errors = Array.isArray(problem && problem.errors) ? problem.errors : [];
  }
}

/** The server could not be reached at all. */
export class NetworkError extends Error {
  constructor(cause) {
    super(`cannot reach the Gauntlet server: ${cause && cause.message ? cause.message : cause}`);
    this.name = 'NetworkError';
    this.cause = cause;
  }
}

export function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token); else localStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives for this page only */ }
  memoryToken = token || '';
  declined = false;
}

let memoryToken = '';
let askToken = null;      // async (reason) => token or null; set by the app
let pendingAsk = null;    // one prompt shared by concurrent 401s
let declined = false;     // the user cancelled the prompt: do not ask again by itself
const reachListeners = new Set();
const authListeners = new Set();

/** Sets the function that asks the user for a token after a 401. */
export function onTokenNeeded(fn) { askToken = fn; }

/** Calls fn(ok, error) after every request: ok false when the server is unreachable. */
export function onReachability(fn) { reachListeners.add(fn); return () => reachListeners.delete(fn); }

/** Calls fn(ok) after every answer: ok false on a 401 the user did not fix. */
export function onAuth(fn) { authListeners.add(fn); return () => authListeners.delete(fn); }

function reach(ok, err) { for (const fn of reachListeners) fn(ok, err); }
function authed(ok) { for (const fn of authListeners) fn(ok); }

function currentToken() { return getToken() || memoryToken; }

async function tokenAfter401(problem) {
  if (!askToken || declined) return null;
  if (!pendingAsk) {
    pendingAsk = Promise.resolve(askToken(problem)).then((tok) => {
      if (!tok) declined = true;
      return tok;
    }).finally(() => { pendingAsk = null; });
  }
  return pendingAsk;
}

/**
 * Calls the API. body: undefined (none), FormData (sent as is) or a value
 * sent as JSON. Resolves with the decoded JSON (or text) of a 2xx answer;
 * rejects with APIError or NetworkError.
 */
export async function api(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: 'application/json, application/problem+json' };
    const token = currentToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    let payload;
    if (body instanceof FormData) {
      payload = body;
    } else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
    } catch (err) {
      const ne = new NetworkError(err);
      reach(false, ne);
      throw ne;
    }
    reach(true);
    const type = res.headers.get('Content-Type') || '';
    let data = null;
    const text = await res.text();
    if (text && type.includes('json')) {
      try { data = JSON.parse(text); } catch { data = { detail: text }; }
    } else if (text) {
      data = res.ok ? text : { detail: text.trim() };
    }
    if (res.ok) { authed(true); return data; }
    if (res.status === 401) {
      if (attempt < 3) {
        const fresh = await tokenAfter401(data);
        if (fresh) { setToken(fresh); continue; }
      }
      authed(false);
    }
    throw new APIError(res.status, data);
  }
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
export const put = (path, body) => api('PUT', path, body);
export const del = (path) => api('DELETE', path);

/** Encodes one path segment. */
export const seg = (s) => encodeURIComponent(String(s));

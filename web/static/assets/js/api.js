// @ts-check
/** @import { Problem, ErrorDetail } from '../../../types/api' */

// The dashboard's only way to the server: the public HTTP API, with the
// API token (if any) from local storage, problem+json errors turned into
// APIError, and network failures reported to whoever listens.

const TOKEN_KEY = 'gauntlet.apiToken';

/** An error answer of the API: RFC 9457 problem+json. */
export class APIError extends Error {
  /**
   * @param {number} status
   * @param {Problem | null} problem
   */
  constructor(status, problem) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.name = 'APIError';
    this.status = status;
    /** @type {Problem} */
    this.problem = problem || {};
    /** @type {ErrorDetail[]} */
    this.errors = problem && Array.isArray(problem.errors) ? problem.errors : [];
  }
}

/** The server could not be reached at all. */
export class NetworkError extends Error {
  /** @param {unknown} cause what fetch threw */
  constructor(cause) {
    super(`cannot reach the Gauntlet server: ${cause instanceof Error && cause.message ? cause.message : cause}`);
    this.name = 'NetworkError';
    this.cause = cause;
  }
}

/**
 * The API token: the one in local storage, else the one kept in the page
 * when the browser refuses storage (site data blocked). Anything that
 * sends its own request (an export's fetch) takes it from here.
 */
export function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || memoryToken; } catch { return memoryToken; }
}

/** @param {string | null} token empty or null: forget it */
export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token); else localStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives for this page only */ }
  memoryToken = token || '';
  declined = false;
}

let memoryToken = '';
/** @type {((problem: Problem | null) => Promise<string | null> | string | null) | null} */
let askToken = null;      // async (reason) => token or null; set by the app
/** @type {Promise<string | null> | null} */
let pendingAsk = null;    // one prompt shared by concurrent 401s
let declined = false;     // the user cancelled the prompt: do not ask again by itself
/** @type {Set<(ok: boolean, err?: NetworkError) => void>} */
const reachListeners = new Set();
/** @type {Set<(ok: boolean) => void>} */
const authListeners = new Set();

/**
 * Sets the function that asks the user for a token after a 401.
 * @param {(problem: Problem | null) => Promise<string | null> | string | null} fn
 */
export function onTokenNeeded(fn) { askToken = fn; }

/**
 * Calls fn(ok, error) after every request: ok false when the server is unreachable.
 * @param {(ok: boolean, err?: NetworkError) => void} fn
 */
export function onReachability(fn) { reachListeners.add(fn); return () => reachListeners.delete(fn); }

/**
 * Calls fn(ok) after every answer: ok false on a 401 the user did not fix.
 * @param {(ok: boolean) => void} fn
 */
export function onAuth(fn) { authListeners.add(fn); return () => authListeners.delete(fn); }

/** @param {boolean} ok @param {NetworkError} [err] */
function reach(ok, err) { for (const fn of reachListeners) fn(ok, err); }
/** @param {boolean} ok */
function authed(ok) { for (const fn of authListeners) fn(ok); }

/** @param {Problem | null} problem */
async function tokenAfter401(problem) {
  const ask = askToken;
  if (!ask || declined) return null;
  if (!pendingAsk) {
    pendingAsk = Promise.resolve(ask(problem)).then((tok) => {
      if (!tok) declined = true;
      return tok;
    }).finally(() => { pendingAsk = null; });
  }
  return pendingAsk;
}

/**
 * Calls the API. body: undefined (none), FormData (sent as is) or a value
 * sent as JSON. Resolves with the decoded JSON (or text) of a 2xx answer;
 * rejects with APIError or NetworkError. The caller states the shape it
 * expects by the type of what it assigns the answer to (T).
 * @template [T=unknown]
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<T>}
 */
export async function api(method, path, body) {
  // The user cancelled the token prompt: asking the server again would
  // only be refused, every poll. Nothing is sent until a token is set (or
  // forgotten), which is the user acting.
  if (declined) {
    authed(false);
    throw new APIError(401, { status: 401, title: 'Unauthorized', detail: 'this server requires an API token: enter it with "API token…"' });
  }
  for (let attempt = 0; ; attempt++) {
    /** @type {Record<string, string>} */
    const headers = { Accept: 'application/json, application/problem+json' };
    const token = getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    /** @type {FormData | string | undefined} */
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
    /** @type {any} the decoded answer: T when res.ok, else a problem */
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

/**
 * @template [T=unknown]
 * @param {string} path
 * @returns {Promise<T>}
 */
export const get = (path) => api('GET', path);
/**
 * @template [T=unknown]
 * @param {string} path
 * @param {unknown} [body] JSON ({} when left out) or FormData
 * @returns {Promise<T>}
 */
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
/**
 * @template [T=unknown]
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<T>}
 */
export const put = (path, body) => api('PUT', path, body);
/**
 * @template [T=unknown]
 * @param {string} path
 * @returns {Promise<T>}
 */
export const del = (path) => api('DELETE', path);

/**
 * Encodes one path segment.
 * @param {string | number} s
 */
export const seg = (s) => encodeURIComponent(String(s));

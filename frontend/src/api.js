// The page's one way to the on-call API (kafka_archive.ui.api), beside Airflow's own: the API
// is mounted at <Airflow's base>/kafka-archive/api/v1, and the page, rendered by Airflow's UI,
// finds Airflow's base in the document's <base href>. Requests carry the Airflow UI's session
// cookie; a POST also the CSRF header the API asks of a cookie-authenticated caller.

const CSRF = { "X-Kafka-Archive-Request": "1" };

/** The API's base URL (no trailing slash). */
export function apiBase(baseURI = document.baseURI) {
  return new URL("kafka-archive/api/v1", baseURI).href.replace(/\/+$/, "");
}

/** A refusal of the API, in the page's words: `message` (with the API's hint), the HTTP
 * `status`, the API's `error` code and, when the API names it, the request `field` at fault. */
export class ApiError extends Error {
  constructor(status, body) {
    const text = (body && body.message) || `the server answered ${status}`;
    super(body && body.hint ? `${text} - ${body.hint}` : text);
    this.status = status;
    this.code = (body && body.error) || "http_error";
    this.field = (body && body.field) || null;
  }
}

/** `GET path` (or `POST` with `body`), the answer's JSON; an `ApiError` when refused and a
 * plain Error in words when the server cannot be reached. */
export async function api(path, { body, base = apiBase() } = {}) {
  const init = { credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers = { ...init.headers, ...CSRF, "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  let answer;
  try {
    answer = await fetch(base + path, init);
  } catch (e) {
    throw new Error(`the on-call API cannot be reached (${e.message}): is Airflow's API server up?`);
  }
  let data = null;
  try {
    data = await answer.json();
  } catch (e) {
    data = { message: answer.statusText };
  }
  if (!answer.ok) throw new ApiError(answer.status, data);
  return data;
}

/** A query string of the non-empty `params` (arrays repeat their name). */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => u.append(k, String(x)));
    else if (v !== null && v !== undefined && v !== "") u.append(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : "";
}

export const enc = encodeURIComponent;

/** The catalog path of a topic. */
export function topicPath(cluster, topic) {
  return `/clusters/${enc(cluster)}/topics/${enc(topic)}`;
}

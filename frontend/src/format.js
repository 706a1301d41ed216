// Formatting shared by the page's sections (pure: tested by test/format.test.js).

/** An epoch-ms instant as ISO-8601 UTC, "-" for none. */
export function utc(ms) {
  return ms == null || ms < 0 ? "-" : new Date(ms).toISOString();
}

/** A count with thousands separators. */
export function count(n) {
  return n == null ? "-" : Number(n).toLocaleString("en-US");
}

/** A byte size in words (B, KiB, MiB, GiB). */
export function bytes(n) {
  if (n == null) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Number(n), i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

/** A duration in ms in words: "250 ms", "5 s", "2 min", "1.5 h", "3 d". */
export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60e3) return `${+(ms / 1e3).toFixed(1)} s`;
  if (ms < 3600e3) return `${+(ms / 60e3).toFixed(1)} min`;
  if (ms < 86400e3) return `${+(ms / 3600e3).toFixed(1)} h`;
  return `${+(ms / 86400e3).toFixed(1)} d`;
}

const WORDS = {
  bootstrap_servers: "bootstrap servers", cluster_id: "cluster id", topic_exists: "topic exists",
  partitions: "partitions", name: "name", reachable: "reachable",
};

/** A key of an API object as words ("cluster_id" -> "cluster id"). */
export function words(key) {
  return WORDS[key] || String(key).replace(/_/g, " ");
}

/** An API value as text a person reads: lists joined, objects as "key: value" pairs,
 * booleans as yes/no, null as "-". */
export function readable(v) {
  if (v === null || v === undefined) return "-";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return v.length ? v.map(readable).join(", ") : "none";
  if (typeof v === "object") {
    const parts = Object.entries(v).map(([k, x]) => `${words(k)}: ${readable(x)}`);
    return parts.length ? parts.join("; ") : "-";
  }
  return String(v);
}

/** `obj`'s fields as [label, text] rows, nested objects flattened one level
 * ("target.cluster_id" -> "cluster id"). */
export function fieldRows(obj) {
  if (!obj || typeof obj !== "object") return [];
  const rows = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v)) rows.push([`${words(k)}: ${words(k2)}`, readable(v2)]);
    } else {
      rows.push([words(k), readable(v)]);
    }
  }
  return rows;
}

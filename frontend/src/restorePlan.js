// The "Restore" form's pure logic (tested by test/restorePlan.test.js): lists as typed, and
// where each problem of the preflight is shown (next to the field that fixes it).

/** Names or patterns typed one a line or comma separated (blank entries dropped). */
export function nameList(text) {
  return text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
}

/** The form field that fixes a preflight problem (`code`, see kafka_archive.restore.preflight),
 * else null (the problem is shown only in the plan's list). */
export const PROBLEM_FIELD = {
  nothing_selected: "topics",
  target_unreachable: "target",
  name_collision: "prefix",
  replication_factor: "replication_factor",
  hole: "allow_gaps",
  permission_denied: "target_principal",
  permissions_unverified: "target_principal",
};

/** `{field: message}` of the plan's errors (what keeps Launch off; several to a field are
 * joined), each with what to do. Warnings stay in the plan's list only. */
export function problemsByField(problems) {
  const out = {};
  for (const p of problems || []) {
    const field = PROBLEM_FIELD[p.code];
    if (!field || p.level !== "error") continue;
    const text = `${p.message}${p.hint ? ` - ${p.hint}` : ""}`;
    out[field] = out[field] ? `${out[field]}; ${text}` : text;
  }
  return out;
}

// node --test: the Restore form's lists and where a preflight problem is shown.
import assert from "node:assert/strict";
import { test } from "node:test";

import { nameList, problemsByField } from "../src/restorePlan.js";

test("names are typed a line or comma separated", () => {
  assert.deepEqual(nameList(" orders, payments\n\nre:audit-.*\n"), ["orders", "payments", "re:audit-.*"]);
  assert.deepEqual(nameList("  "), []);
});

test("each error goes to the field that fixes it, with what to do; warnings do not", () => {
  const got = problemsByField([
    { level: "warning", code: "hole", message: "orders-0 offsets 3..4 cannot be restored", hint: "--allow-gaps" },
    { level: "error", code: "name_collision", message: "topic 'orders' already exists on the target", hint: "use a prefix" },
    { level: "error", code: "nothing_selected", message: "topic pattern 'nope' matches no archived topic" },
    { level: "error", code: "name_collision", message: "topic 'payments' already exists on the target" },
    { level: "error", code: "something_new", message: "not for a field" },
  ]);
  assert.deepEqual(Object.keys(got).sort(), ["prefix", "topics"]);
  assert.equal(got.prefix, "topic 'orders' already exists on the target - use a prefix; topic 'payments' already exists on the target");
  assert.equal(got.topics, "topic pattern 'nope' matches no archived topic");
  assert.equal(problemsByField([{ level: "error", code: "hole", message: "orders-0 offsets 3..4 cannot be restored" }]).allow_gaps,
    "orders-0 offsets 3..4 cannot be restored");
  assert.deepEqual(problemsByField(undefined), {});
});

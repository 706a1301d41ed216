// node --test: where an error is shown (frontend/src/errors.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { errorField } from "../src/errors.js";

const FIELDS = ["from", "to", "partitions", "target", "replay_id"];

test("the field the API names wins", () => {
  assert.equal(errorField({ field: "to", message: "from: x" }, FIELDS, "preview"), "to");
});

test("a message that starts with a field's name goes to that field", () => {
  assert.equal(errorField({ message: "from: String should have at least 1 character" }, FIELDS, "preview"), "from");
  assert.equal(errorField({ message: "partitions 99 of c1/orders are not in the archive" }, FIELDS, "preview"), "partitions");
});

test("a message quoting a field's value goes to that field", () => {
  const values = { from: "soon", to: null, replay_id: "nope", target: "localhost:9" };
  assert.equal(errorField({ message: "cannot read 'soon' as a time" }, FIELDS, "preview", values), "from");
  assert.equal(errorField({ message: "no replay 'nope' in the catalog" }, FIELDS, "preview", values), "replay_id");
});

test("anything else stays beside the button that asked", () => {
  assert.equal(errorField({ message: "no finished replay of c1/orders" }, FIELDS, "preview", { from: "x" }), "preview");
  assert.equal(errorField(new Error("the on-call API cannot be reached"), FIELDS, "launch"), "launch");
});

test("a sentence that merely starts with a field's word is not that field's", () => {
  assert.equal(errorField({ message: "to reach the target, check its servers" }, FIELDS, "preview"), "preview");
});

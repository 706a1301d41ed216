// node --test: which topic the page shows (frontend/src/topics.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { chooseTopic, topicNames } from "../src/topics.js";

const HOLDINGS = [
  { topic: "orders", partition: 1 }, { topic: "clicks", partition: 0 },
  { topic: "__consumer_offsets", partition: 0 }, { topic: "orders", partition: 0 },
];

test("user topics, each once, sorted", () => {
  assert.deepEqual(topicNames(HOLDINGS), ["clicks", "orders"]);
  assert.deepEqual(topicNames([]), []);
});

test("a topic the archive holds is shown, without an error", () => {
  assert.deepEqual(chooseTopic("demo", ["clicks", "orders"], "orders"), { topic: "orders", error: null });
});

test("a topic it lacks: the first one is shown, and the error names the one asked for", () => {
  const got = chooseTopic("demo", ["clicks", "orders"], "no-such-topic");
  assert.equal(got.topic, "clicks");
  assert.equal(got.error, 'the archive of demo holds no topic "no-such-topic"; showing clicks');
  assert.equal(chooseTopic("demo", [], "orders").error, 'the archive of demo holds no topic "orders"; showing none');
});

test("nothing asked: the first topic, no error", () => {
  assert.deepEqual(chooseTopic("demo", ["clicks"], ""), { topic: "clicks", error: null });
});

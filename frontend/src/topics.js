// Which topic the page shows (pure: tested by test/topics.test.js).

/** The user topics among a cluster's archived partitions (`holdings`): distinct, sorted,
 * internal (`__`) topics left out. */
export function topicNames(holdings) {
  return [...new Set(holdings.map((h) => h.topic))].filter((t) => !t.startsWith("__")).sort();
}

/** The topic to show when `wanted` is asked of `cluster` whose topics are `names`: `wanted`
 * if the archive holds it, else the first one; `error` says so when `wanted` was named and is
 * not held (null otherwise). */
export function chooseTopic(cluster, names, wanted) {
  if (names.includes(wanted)) return { topic: wanted, error: null };
  const topic = names[0] || "";
  const error = wanted ? `the archive of ${cluster} holds no topic "${wanted}"; showing ${topic || "none"}` : null;
  return { topic, error };
}

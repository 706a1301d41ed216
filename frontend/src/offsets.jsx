// "Offsets of TOPIC at T": per partition the offset at T (the catalog's ListOffsets answer),
// what the archive holds, and its holes once /holes has answered.
import { Badge, Stack, Text } from "@chakra-ui/react";

import { count, utc } from "./format.js";
import { SimpleTable } from "./ui.jsx";

function holesOf(holes, p) {
  if (holes === null) return <Text as="span" color="fg.muted" className="checking">checking...</Text>;
  const mine = holes.filter((h) => h.partition === p);
  if (!mine.length) return <Text as="span" color="fg.muted">none</Text>;
  return (
    <Stack gap={0}>
      {mine.map((g, i) => (
        <Text as="span" key={i} color={g.severity === "error" ? "fg.error" : g.severity === "warning" ? "fg.warning" : "fg.muted"}>
          {g.kind} {g.start_offset}..{g.end_offset}
        </Text>
      ))}
    </Stack>
  );
}

export function OffsetsTable({ offsets, partitions, holes }) {
  const byP = Object.fromEntries(partitions.map((h) => [h.partition, h]));
  const rows = offsets.map((a) => {
    const h = byP[a.partition] || {};
    const offset = a.exact === false ? `${a.offset}..${a.offset_max}` : String(a.offset);
    return [
      a.partition,
      <span className="offset-at-t">{offset}</span>,
      a.exact === false ? "(no store)" : <>{utc(a.timestamp)}{a.note ? <Badge ml={1} colorPalette="orange">{a.note}</Badge> : null}</>,
      count(h.first_offset), utc(h.first_timestamp), count(h.last_offset), utc(h.max_timestamp),
      holesOf(holes, a.partition),
    ];
  });
  return (
    <SimpleTable id="offsets" rows={rows} numeric={[true, true, false, true, false, true, false, false]}
      heads={["partition", "offset at T", "time of the record at T (UTC)", "archive first offset", "first time",
        "archive last offset", "last time", "holes / problems"]} />
  );
}

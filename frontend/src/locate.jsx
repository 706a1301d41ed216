// "Locate an offset": where an offset is archived (object, byte range, batch, timestamp).
// Each Locate clears the previous answer first; so does a new topic or T (a new `shown`).
import { Button, HStack, Input, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";

import { api, enc, qs, topicPath } from "./api.js";
import { count, utc } from "./format.js";
import { errorField, FormField, InlineError, Section, Select, SimpleTable, useTickets } from "./ui.jsx";

export function LocateSection({ shown }) {
  const tickets = useTickets();
  const [partition, setPartition] = useState("0");
  const [offset, setOffset] = useState("");
  const [found, setFound] = useState(null);
  const [errors, setErrors] = useState({});
  useEffect(() => { tickets("locate"); setFound(null); setErrors({}); }, [shown]); // eslint-disable-line react-hooks/exhaustive-deps
  const partitions = shown ? shown.offsets.map((a) => String(a.partition)) : [];

  async function locate() {
    const current = tickets("locate");
    setFound(null); setErrors({});
    if (!shown) { setErrors({ locate: "show a topic first" }); return; }
    if (!/^\d+$/.test(offset.trim())) { setErrors({ offset: "type an offset: a whole number, 0 or more" }); return; }
    try {
      const l = await api(topicPath(shown.cluster, shown.topic) + `/partitions/${enc(partition)}/locate` + qs({ offset: offset.trim() }));
      if (current()) setFound(l);
    } catch (e) {
      if (current()) setErrors({ [errorField(e, ["partition", "offset"], "offset")]: e.message });
    }
  }
  return (
    <Section id="locate-section" title="Locate an offset">
      <HStack alignItems="flex-start" gap={3} flexWrap="wrap" as="form" onSubmit={(e) => { e.preventDefault(); locate(); }}>
        <FormField label="Partition" name="partition" error={errors.partition} width="auto">
          <Select name="loc-partition" value={partition} options={partitions.length ? partitions : ["0"]} onChange={setPartition} width="7em" />
        </FormField>
        <FormField label="Offset" name="offset" error={errors.offset} width="14em">
          <Input size="sm" name="loc-offset" value={offset} onChange={(e) => setOffset(e.target.value)} inputMode="numeric" />
        </FormField>
        <Button size="sm" variant="outline" mt={6} type="submit" id="loc-go">Locate</Button>
      </HStack>
      <InlineError name="locate" error={errors.locate} />
      {found ? (
        <div id="loc-out">
          <SimpleTable heads={["object", "byte range", "batch offsets", "record time (UTC)"]}
            rows={[[found.object_key, `${count(found.byte_start)}-${count(found.byte_end)}`,
              `${found.batch_base_offset}-${found.batch_last_offset}`, utc(found.timestamp)]]} />
          {found.exact ? null : (
            <Text color="fg.warning" fontSize="sm">offset {found.offset} holds no record (compaction removed it); the next is {found.found_offset}</Text>
          )}
        </div>
      ) : null}
    </Section>
  );
}

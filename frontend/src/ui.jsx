// Small building blocks of the page, in Airflow's own Chakra UI (the host's, through
// globalThis.ChakraUI): a form field whose error is shown under it, a native select, a plain
// table, a ticket that drops late answers.
import { Box, Checkbox, DataList, Field, Heading, NativeSelect, Table, Text } from "@chakra-ui/react";
import { useRef } from "react";

export { errorField } from "./errors.js";

/** Answers arrive in any order (a slow /time after Show, two quick topic picks, a zoom while
 * the chart loads): each request takes a ticket, and only the latest ticket's answer is shown. */
export function useTickets() {
  const last = useRef({});
  return (kind) => {
    const n = (last.current[kind] = (last.current[kind] || 0) + 1);
    return () => last.current[kind] === n;
  };
}

/** A labelled form field; `error` is shown right under it, in red, and marks it invalid. */
export function FormField({ label, error, helper, name, children, width, flex }) {
  return (
    <Field.Root invalid={Boolean(error)} width={width} flex={flex} data-field={name}>
      {label ? <Field.Label fontSize="sm">{label}</Field.Label> : null}
      {children}
      {error ? (
        <Field.ErrorText data-testid={`error-${name}`} role="alert">{error}</Field.ErrorText>
      ) : helper ? (
        <Field.HelperText fontSize="xs">{helper}</Field.HelperText>
      ) : null}
    </Field.Root>
  );
}

/** An error that belongs to a button or a section rather than to a field. */
export function InlineError({ name, error }) {
  if (!error) return null;
  return (
    <Text color="fg.error" fontSize="sm" data-testid={`error-${name}`} role="alert">{error}</Text>
  );
}

/** A labelled check box whose input is named ``id`` (the browser tests find it by that). */
export function Check({ id, checked, onChange, children }) {
  return (
    <Checkbox.Root size="sm" data-testid={id} checked={checked} onCheckedChange={(e) => onChange(Boolean(e.checked))}>
      <Checkbox.HiddenInput name={id} />
      <Checkbox.Control />
      <Checkbox.Label>{children}</Checkbox.Label>
    </Checkbox.Root>
  );
}

/** A native select of `options` (strings, or [value, label] pairs). */
export function Select({ name, value, onChange, options, width = "14em", disabled }) {
  return (
    <NativeSelect.Root size="sm" width={width} disabled={disabled}>
      <NativeSelect.Field name={name} value={value} onChange={(e) => onChange(e.target.value)}>
        {options.map((o) => {
          const [v, l] = Array.isArray(o) ? o : [o, o];
          return <option key={v} value={v}>{l}</option>;
        })}
      </NativeSelect.Field>
      <NativeSelect.Indicator />
    </NativeSelect.Root>
  );
}

/** A table of `rows` (arrays of cells) under `heads`; `numeric[i]` right-aligns column i. */
export function SimpleTable({ id, heads, rows, numeric = [], caption }) {
  return (
    <Box overflowX="auto">
      <Table.Root size="sm" variant="outline" id={id} width="auto" minWidth="50%">
        {caption ? <Table.Caption>{caption}</Table.Caption> : null}
        <Table.Header>
          <Table.Row>
            {heads.map((h, i) => (
              <Table.ColumnHeader key={h} textAlign={numeric[i] ? "end" : "start"}>{h}</Table.ColumnHeader>
            ))}
          </Table.Row>
        </Table.Header>
        <Table.Body>
          {rows.map((r, j) => (
            <Table.Row key={j}>
              {r.map((c, i) => (
                <Table.Cell key={i} textAlign={numeric[i] ? "end" : "start"}>{c}</Table.Cell>
              ))}
            </Table.Row>
          ))}
        </Table.Body>
      </Table.Root>
    </Box>
  );
}

/** Labelled values (`items`: [label, value] pairs), a label column beside a value column. */
export function Fields({ id, items }) {
  return (
    <DataList.Root orientation="horizontal" size="sm" id={id} gap={1}>
      {items.map(([label, value]) => (
        <DataList.Item key={label}>
          <DataList.ItemLabel minWidth="14em">{label}</DataList.ItemLabel>
          <DataList.ItemValue>{value}</DataList.ItemValue>
        </DataList.Item>
      ))}
    </DataList.Root>
  );
}

/** A section of the page: a heading and its content. */
export function Section({ id, title, right, children }) {
  return (
    <Box as="section" id={id} borderWidth="1px" borderColor="border" borderRadius="md" p={4} bg="bg">
      <Box display="flex" alignItems="center" gap={3} mb={3} flexWrap="wrap">
        <Heading size="md">{title}</Heading>
        {right}
      </Box>
      {children}
    </Box>
  );
}

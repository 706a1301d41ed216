// Where the page shows an error (pure: tested by test/errors.test.js).

/** Where an error goes: the field the API names (`field`), else the field the message starts
 * with ("from: ...", "partitions 99 of ..."), else the field whose value the message quotes
 * ("cannot read 'soon' as a time"), else `fallback` (the button that made the request).
 * `values`: the request's fields by name. */
export function errorField(err, fields, fallback, values = {}) {
  if (err && err.field && fields.includes(err.field)) return err.field;
  const text = (err && err.message) || "";
  const m = /^([a-z_]+)(?:\.[\w.]+)?(?::| \d)/.exec(text);
  if (m && fields.includes(m[1])) return m[1];
  for (const f of fields) {
    const v = values[f];
    if (v !== null && v !== undefined && String(v) !== "" && typeof v !== "object" && text.includes(`'${v}'`)) return f;
  }
  return fallback;
}

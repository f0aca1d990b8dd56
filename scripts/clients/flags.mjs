// The command-line handling the client scripts share: strict --name value
// flags, and one way to say what was wrong. A bad argument prints
// "SCRIPT: what was wrong" to stderr and exits 2, as every knowngood
// command does.
import { parseArgs } from "node:util";

// flags parses argv against options (node:util parseArgs's) for the
// script named name. It returns the values, usage (prints a message and
// exits 2), and intFlag(flag, max): the flag's value as an integer from 1
// to max, or usage.
export function flags(name, argv, options) {
  const usage = (msg) => {
    console.error(`${name}: ${msg}`);
    process.exit(2);
  };
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options }));
  } catch (err) {
    usage(err.message);
  }
  const intFlag = (flag, max) => {
    const s = values[flag];
    const v = Number(s);
    if (!/^[0-9]+$/.test(s) || v < 1 || v > max) usage(`bad --${flag} ${JSON.stringify(s)}: want an integer from 1 to ${max}`);
    return v;
  };
  return { values, usage, intFlag };
}

// wsURL is values.url when it is a ws:// or wss:// URL; else usage.
export function wsURL(values, usage) {
  if (values.url === undefined || !/^wss?:\/\//.test(values.url)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want ws://HOST:PORT/PATH`);
  }
  return values.url;
}

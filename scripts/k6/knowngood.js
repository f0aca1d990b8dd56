// What the k6 recipes share (k6 finds it beside the script that imports
// it, whatever the working directory).
import { Counter } from "k6/metrics";

// counters are the knowngood_* counters, which count what the target
// counts: tried and completed connections, messages sent and received in
// the target's units. loadgen watch reads them from the end-of-test
// summary. Made in k6's init context, like every metric.
export function counters() {
  return {
    attempts: new Counter("knowngood_attempts"),
    ok: new Counter("knowngood_ok"),
    sent: new Counter("knowngood_sent"),
    received: new Counter("knowngood_received"),
  };
}

// runOptions are the options of a run of ITERATIONS iterations shared by
// VUS virtual users, over MAX_DURATION at most, that fails (k6's exit
// status) when a check does or when thresholds, the recipe's own, do not
// hold.
export function runOptions(scenario, thresholds) {
  return {
    scenarios: {
      [scenario]: {
        executor: "shared-iterations",
        vus: parseInt(__ENV.VUS || "10", 10),
        iterations: parseInt(__ENV.ITERATIONS || "50", 10),
        maxDuration: __ENV.MAX_DURATION || "60s",
      },
    },
    thresholds: { checks: ["rate==1"], ...thresholds },
  };
}

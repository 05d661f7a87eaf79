// Determinism for the generators (generate.mjs, navigation.mjs, harness.mjs): a fake clock, a fake
// performance.now and seeded randomness behind crypto.randomUUID, getRandomValues and Math.random,
// so reruns write the same bytes. Import it before pi's packages (the generators import those
// dynamically, after it) and call reset(n) to start the clock and the seeds afresh for the n-th
// session.

import nodeCrypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";

const RealDate = Date;
const START = RealDate.UTC(2026, 10, 20, 12, 0, 0);
let clock = START;
class FakeDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) {
			clock += 1000;
			super(clock);
		} else {
			super(...args);
		}
	}
	static now() {
		clock += 1000;
		return clock;
	}
}
globalThis.Date = FakeDate;
let perf = 0;
performance.now = () => (perf += 5); // tool and reply durations

/** mulberry32 over the state in `holder.seed`: a number in [0, 1). */
function next(holder) {
	holder.seed = (holder.seed + 0x6d2b79f5) | 0;
	let t = holder.seed;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
// Two streams: one for ids and random bytes, one for Math.random (pi's faux provider names its
// api with it), so seeding Math.random left the id stream as it was.
const ids = { seed: 1 };
const maths = { seed: 1 };
const random = () => next(ids);
Math.random = () => next(maths);
function fill(bytes) {
	for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
	return bytes;
}
nodeCrypto.randomUUID = () => {
	const b = fill(new Uint8Array(16));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
syncBuiltinESMExports();
Object.defineProperty(globalThis.crypto, "getRandomValues", { value: fill, configurable: true });

/** The n-th session's start: the clock at day n after START, the seed n, no elapsed time. */
export function reset(n) {
	clock = START + n * 86_400_000;
	ids.seed = n;
	maths.seed = n;
	perf = 0;
}

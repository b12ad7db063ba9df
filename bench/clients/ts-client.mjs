// The TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// package.json) as the benchmark drives it: `node ts-client.mjs SPEC-JSON`.
// Connects (not timed), warms up, then for each concurrency level makes N
// tools/call and prints one JSON line: per-call latencies (µs), wall time,
// and this process's own CPU time (process.cpuUsage, i.e. getrusage) over
// exactly that window. Same contract as `bench worker` (bench/src/workers.rs).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2]);

async function main() {
  const client = new Client({ name: "bench-ts", version: "0.0.0" });
  const transport = spec.stdio
    ? new StdioClientTransport({ command: spec.stdio[0], args: spec.stdio.slice(1), stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(spec.url));
  await client.connect(transport);
  const options = { timeout: (spec.timeout_s ?? 60) * 1000 };
  const call = async () => {
    const result = await client.callTool({ name: spec.tool, arguments: spec.args }, undefined, options);
    if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
    const first = result.content?.[0];
    return first && typeof first.text === "string" ? Buffer.byteLength(first.text) : 0;
  };
  let resultLen = 0;
  for (let i = 0; i < spec.warmup; i++) resultLen = await call();
  const modes = [];
  for (const inflight of spec.inflight) {
    const per = Math.ceil(spec.n / inflight);
    const ru0 = process.resourceUsage();
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const lanes = [];
    for (let lane = 0; lane < inflight; lane++) {
      const count = Math.max(0, Math.min(per, spec.n - lane * per));
      lanes.push((async () => {
        const lat = [];
        for (let i = 0; i < count; i++) {
          const t = process.hrtime.bigint();
          resultLen = await call();
          lat.push(Number(process.hrtime.bigint() - t) / 1000);
        }
        return lat;
      })());
    }
    const lat = (await Promise.all(lanes)).flat();
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const ru1 = process.resourceUsage();
    const switches = (ru1.voluntaryContextSwitches - ru0.voluntaryContextSwitches) + (ru1.involuntaryContextSwitches - ru0.involuntaryContextSwitches);
    modes.push({ inflight, n: lat.length, wall_s: wall, cpu_user_s: cpu.user / 1e6, cpu_sys_s: cpu.system / 1e6, switches, lat_us: lat });
  }
  process.stdout.write(JSON.stringify({ modes, result_len: resultLen }) + "\n");
  await client.close().catch(() => {});
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + "\n");
    process.exit(0);
  },
);

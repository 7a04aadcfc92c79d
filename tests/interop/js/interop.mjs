// tether's subjects called by the official NATS JavaScript client, as a service outside
// tether would call them. The bodies come from the test, built from `tether contracts`'
// JSON Schemas; what came back is printed as one JSON object for the test to check.
//
//   node interop.mjs < input.json
import { readFileSync } from "node:fs";
import { connect, headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};

function reply(msg) {
  const problem = msg.headers?.get("Tether-Problem") || null;
  return { problem, body: msg.json() };
}

async function ask(nc, subject, body) {
  const h = headers();
  h.set("Tether-Principal", JSON.stringify(input.principal));
  const msg = await nc.request(subject, JSON.stringify(body), { timeout: 10000, headers: h });
  return reply(msg);
}

async function refusal(run) {
  try {
    await run();
    return null;
  } catch (err) {
    return String(err?.message || err);
  }
}

const gateway = await connect({
  servers: input.servers,
  user: "gateway",
  pass: input.passwords.gateway,
  inboxPrefix: "_INBOX.gateway",
});
const created = await ask(gateway, "tether.rooms.create", input.bodies.create);
out.created = created;
const room = created.body.id;
out.sent = await ask(gateway, "tether.rooms.send", { ...input.bodies.send, id: room });
out.unknown_field = await ask(gateway, "tether.rooms.create", {
  ...input.bodies.create,
  colour: "blue",
});
out.missing = await ask(gateway, "tether.rooms.get", { id: input.missing_room });
await gateway.drain();

// Without the right credentials the bus itself refuses.
out.wrong_password = await refusal(() =>
  connect({ servers: input.servers, user: "gateway", pass: "not-the-password" }),
);
const audit = await connect({
  servers: input.servers,
  user: "audit",
  pass: input.passwords.audit,
  inboxPrefix: "_INBOX.audit",
});
out.not_a_caller = await refusal(() =>
  ask(audit, "tether.rooms.create", input.bodies.create),
);
await audit.close();

// The room's history, read from its stream by a JetStream consumer.
const operator = await connect({
  servers: input.servers,
  user: "operator",
  pass: input.passwords.operator,
  inboxPrefix: "_INBOX.operator",
});
const js = jetstream(operator);
const consumer = await js.consumers.get("ROOMS", {
  filter_subjects: [`rooms.msg.${input.principal.org}.${room}`],
});
out.history = [];
const messages = await consumer.fetch({ max_messages: 10, expires: 2000 });
for await (const m of messages) {
  out.history.push(m.json());
  if (m.info.pending === 0) break;
}
await operator.close();

console.log(JSON.stringify(out));

// Drives a running Mnemo with the official @honcho-ai/sdk and prints what it read back, as JSON.
// Usage: HONCHO_API_KEY=<key> node round_trip.mjs <base URL> <workspace id>
import { Honcho } from "@honcho-ai/sdk";

const [baseURL, workspaceId] = process.argv.slice(2);
// The SDK sends the key as `Authorization: Bearer <key>`.
const honcho = new Honcho({ baseURL, workspaceId, apiKey: process.env.HONCHO_API_KEY, maxRetries: 0 });
const out = {};

const alice = await honcho.peer("alice", { metadata: { role: "user" } });
const bob = await honcho.peer("bob");
const session = await honcho.session("chat-1", { metadata: { topic: "moving" } });
await session.addPeers([alice, [bob, { observeOthers: true }]]);

const sent = await session.addMessages([
  alice.message("I moved to Lisbon last week.", { metadata: { n: 1 } }),
  bob.message("Nice! How is the weather?"),
  alice.message("I work as a nurse at the city hospital.", { createdAt: "2023-05-08T13:56:00Z" }),
]);
out.sent = sent.map((m) => ({ id: m.id, peer: m.peerId, tokens: m.tokenCount, at: m.createdAt }));

const listed = await (await session.messages()).toArray();
out.listed = listed.map((m) => ({ id: m.id, content: m.content }));
const reversed = await (await session.messages({ reverse: true })).toArray();
out.reversed = reversed.map((m) => m.id);
const byBob = await (await session.messages({ filters: { peer_id: "bob" } })).toArray();
out.by_bob = byBob.map((m) => m.content);
out.got = (await session.getMessage(sent[0].id)).content;
out.updated = (await session.updateMessage(sent[1], { flag: true })).metadata;

out.session_peers = (await session.peers()).map((p) => p.id).sort();
out.bob_observes_others = (await session.getPeerConfiguration(bob)).observeOthers;
await session.setPeerConfiguration(bob, { observeOthers: false });
out.bob_observes_others_after = (await session.getPeerConfiguration(bob)).observeOthers;
out.alice_metadata = await alice.getMetadata();
await session.setMetadata({ topic: "work" });
out.session_metadata = await session.getMetadata();
out.peers = (await (await honcho.peers()).toArray()).map((p) => p.id).sort();
out.sessions = (await (await honcho.sessions()).toArray()).map((s) => s.id);

// Errors come back as the SDK's own error classes, with the status and the field named.
for (const [name, call] of [
  ["unknown_message", () => session.getMessage("no-such-message")],
  ["empty_batch", () => session.addMessages([])],
  ["too_many", () => session.addMessages(Array.from({ length: 101 }, () => alice.message("hi")))],
  ["too_long", () => session.addMessages([alice.message("x".repeat(50_001))])],
]) {
  try {
    await call();
    out[name] = "no error";
  } catch (err) {
    out[name] = { error: err.constructor.name, status: err.status, message: String(err.message) };
  }
}

// Memory formed from the messages answers through the SDK too.
async function waitForQueue() {
  let seen = null;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    seen = await honcho.queueStatus();
    if (seen.totalWorkUnits && !seen.pendingWorkUnits && !seen.inProgressWorkUnits) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return seen;
}
let status = await waitForQueue();
out.queue = status;
out.chat = await alice.chat("Where does Alice work?");
const context = await session.context({ tokens: 2000 });
out.context_messages = context.messages.map((m) => m.content);

// A dream asked for is counted by the queue until it has run: waiting on the queue waits for it.
await honcho.scheduleDream({ observer: alice });
out.dream_queued = await honcho.queueStatus();
status = await waitForQueue();
out.dream_queue = status;

// A workspace's metadata set through a client made for a workspace that does not exist yet.
const fresh = new Honcho({ baseURL, workspaceId: `${workspaceId}-fresh`, apiKey: process.env.HONCHO_API_KEY, maxRetries: 0 });
await fresh.setMetadata({ plan: "team" });
out.fresh_metadata = await new Honcho({ baseURL, workspaceId: `${workspaceId}-fresh`, apiKey: process.env.HONCHO_API_KEY }).getMetadata();

console.log(JSON.stringify(out));

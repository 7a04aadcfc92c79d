"use strict";
// The first page's part on what the agent may send without the person: their level, a
// room's own, the org's ceiling to its admin, the window, what left by their lines and the
// sends that ended; and the page's start once signed in (`load`).

let ladder = null;
let following = false;

function chosenLevel() {
  const checked = document.querySelector("input[name=level]:checked");
  return checked ? checked.value : null;
}

function showSendWarning() {
  const send = chosenLevel() === "send" && ladder.settings.default !== "send";
  $("send-warning").hidden = !send;
  $("save-level").disabled = send && !$("understand").checked;
}

function showWindowStatement() {
  const option = ladder.offered_windows.find((o) => o.window === $("window").value);
  $("window-statement").textContent = option ? option.statement : "";
}

async function load() {
  ladder = await api("GET", "/v1/ladder");
  $("org-ceiling").hidden = !admin();
  $("ceiling-level").value = ladder.ceiling || "";
  $("signin").hidden = true;
  $("waiting").hidden = false;
  $("agent").hidden = false;
  $("ladder").hidden = false;
  if (!following) { following = true; followWaiting(); }
  showTerms();
  showWindow();
  showLevel();
  showAgent().catch((error) => say(error.message));
  await showRooms();
}

// What send means and the org's ceiling: they change with the org, not with this page.
function showTerms() {
  $("send-means").textContent = ladder.send_means;
  $("ceiling").hidden = !ladder.ceiling;
  $("ceiling").textContent = ladder.ceiling ? `Your org allows at most: ${ladder.ceiling}.` : "";
}

function showWindow() {
  $("window").replaceChildren(...ladder.offered_windows.map((o) => new Option(o.window, o.window)));
  $("window").value = ladder.settings.window;
  showWindowStatement();
}

// The level as saved. A save shows only what it changed: what the person is choosing
// meanwhile in the other form (a window picked while the level saves) stays as they left it.
function showLevel() {
  document.querySelector(`input[name=level][value=${ladder.settings.default}]`).checked = true;
  $("understand").checked = false;
  showSendWarning();
}

// What a save said it stopped: the pending sends a lowered level or ceiling canceled.
function stoppedSends(canceled) {
  return canceled ? ` ${canceled} pending send(s) stopped.` : "";
}

const ENDED = {
  sending: "Sending now.", sent: "Sent.", canceled: "Canceled: your level went below send.",
  edited: "You sent your version instead.", replaced: "You sent your own text instead.",
  stopped: "You stopped it: nothing was sent.",
  failed: "Failed: it could not be delivered, and nothing was sent.",
};

function closedItem(w) {
  const li = document.createElement("li");
  li.dataset.window = w.id;
  li.dataset.state = w.state;
  li.textContent = `${ENDED[w.state] || w.state} ${w.text}`;
  return li;
}

// Read again every second or two: replaced at each read, the place of someone reading
// them by screen reader, and the words they selected, were lost every second.
const closedItems = keeper((w) => `${w.id} ${w.state}`, closedItem);

const DECIDED = {
  default: "my level everywhere",
  transport: "set for this line",
  room: "set for this room",
  ceiling: "my org's ceiling",
};

// What applies in each room their agent answers in, and its own level to set: what the
// person is choosing in a room and has not saved outlives the list drawn again.
async function showRooms() {
  // Only where the person's agent answers: a manager agent's room with them holds no
  // agent of theirs, so a level there would govern nothing.
  const mine = `agent:${claims().sub}`;
  const rooms = (await readTitles()).filter((r) => r.members.some((m) => m.id === mine));
  const choosing = new Map([...$("rooms").children]
    .filter((li) => li.querySelector("select").value !== li.dataset.saved)
    .map((li) => [li.dataset.room, {
      level: li.querySelector("select").value,
      understood: li.querySelector("input[type=checkbox]").checked,
    }]));
  $("rooms").replaceChildren(...await Promise.all(rooms.map(async (room) => {
    const query = new URLSearchParams({ room: room.id });
    if (room.transport) query.set("transport", room.transport);
    const here = await api("GET", `/v1/ladder/effective?${query}`);
    return roomLevel(room, here, choosing.get(room.id));
  })));
  $("no-rooms").hidden = rooms.length > 0;
}

function roomLevel(room, here, chosen) {
  const li = document.createElement("li");
  li.dataset.room = room.id;
  const applies = Object.assign(document.createElement("span"), {
    className: "applies", textContent: `${room.title}: ${here.level} (${DECIDED[here.decided_by]})` });
  const level = document.createElement("select");
  level.setAttribute("aria-label", `my agent's level in ${room.title}`);
  level.append(new Option("as everywhere", ""), ...["draft", "confirm", "send"].map((l) => new Option(l, l)));
  const saved = ladder.settings.rooms[room.id] || "";
  li.dataset.saved = saved;
  level.value = chosen ? chosen.level : saved;
  const understand = Object.assign(document.createElement("input"),
    { type: "checkbox", checked: Boolean(chosen && chosen.understood) });
  const agree = document.createElement("label");
  agree.append(understand, " I understand, and I choose send in this room.");
  const warning = Object.assign(document.createElement("div"), { className: "warning" });
  warning.append(Object.assign(document.createElement("p"), { textContent: ladder.send_means }), agree);
  const save = button("Save for this room", () => saving(async () => {
    const body = { level: level.value || null, scope: "room", target: room.id };
    if (level.value === "send") body.acknowledge = ladder.send_means;
    const changed = await api("PUT", "/v1/ladder", body);
    ladder.settings = changed.settings;
    await showRooms();  // said once the list shows it: what is clicked then is the new list
    say(`Saved: ${level.value || "my level everywhere"} in ${room.title}.` +
      stoppedSends(changed.canceled_windows));
  }));
  // Raising a room to send states what it means, and needs "I understand", as everywhere.
  const shown = () => {
    const raising = level.value === "send" && saved !== "send";
    warning.hidden = !raising;
    save.disabled = raising && !understand.checked;
  };
  level.onchange = shown;
  understand.onchange = shown;
  shown();
  li.append(applies, " ", level, warning, save);
  return li;
}

const FARES = {
  queued: "handed to the carrier", sent: "sent", delivered: "delivered", failed: "not delivered",
};
const sentItems = keeper(({ room, m }) => JSON.stringify([room.id, room.title, m.seq, m.delivery]),
  ({ room, m }) => {
    const li = document.createElement("li");
    li.dataset.room = room.id;
    li.dataset.seq = m.seq;
    li.dataset.status = m.delivery.status;
    li.textContent = `${room.title}: "${m.text}": ${FARES[m.delivery.status]}` +
      (m.delivery.error ? ` (${m.delivery.error})` : "");
    return li;
  });

// What left by each line, newest first, with how it fares (the carrier's last word). A
// room is read from the first of its ten newest whose fare may still change, or from what
// was read last: a stored message's words never change, nor does a fare delivered or
// failed. (Read whole every two seconds, a line long in use was read 200 at a time.)
const SETTLED = new Set(["delivered", "failed"]);
const lineSent = new Map();  // room id → its ten newest that left by its line, and the last seq read

async function showSent() {
  const rooms = await everyPage("/v1/rooms?limit=200", "rooms");
  const sent = [];
  for (const room of rooms.filter((r) => r.transport && r.correspondent)) {
    const known = lineSent.get(room.id) || { left: [], read: 0 };
    const unsettled = known.left.find((m) => !SETTLED.has(m.delivery.status));
    let after = unsettled ? unsettled.seq - 1 : known.read;
    let left = known.left.filter((m) => m.seq <= after), read = known.read;
    for (;;) {
      const page = await api("GET", `/v1/rooms/${room.id}/messages?after=${after}&limit=200`);
      left.push(...page.messages.filter((m) => m.delivery));
      if (page.messages.length) read = Math.max(read, page.messages[page.messages.length - 1].seq);
      if (page.next === null) break;
      after = page.next;
    }
    left = left.slice(-10);
    lineSent.set(room.id, { left, read });
    sent.push(...left.map((m) => ({ room, m })));
  }
  sent.sort((a, b) => Date.parse(b.m.at) - Date.parse(a.m.at));
  place($("sent"), sentItems(sent.slice(0, 10)));
  $("none-sent").hidden = sent.length > 0;
}

// The ladder as another tab, another device or the org's admin left it. A form the person
// has begun to change stays as they left it, and a read a save overtook is dropped: the
// save's own answer is newer.
let saves = 0;

async function followLadder() {
  if ($("ladder").hasAttribute("aria-busy")) return;
  const asked = saves;
  const now = await api("GET", "/v1/ladder");
  if (asked !== saves || $("ladder").hasAttribute("aria-busy")) return;
  const levelAsSaved = chosenLevel() === ladder.settings.default && !$("understand").checked;
  const windowAsSaved = $("window").value === ladder.settings.window;
  const changed = JSON.stringify(now) !== JSON.stringify(ladder);
  const meant = ladder.send_means;
  ladder = now;
  showTerms();
  if (meant !== ladder.send_means) $("understand").checked = false;
  if (levelAsSaved) showLevel(); else showSendWarning();
  if (windowAsSaved) showWindow(); else showWindowStatement();
  if (changed) await showRooms();
}

let ticks = 0;

async function refresh() {
  if (!ladder) return;
  if (ticks++ % 2 === 0) showSent().catch((error) => say(error.message));
  if (ticks % 5 === 0) followLadder().catch((error) => say(error.message));
  if (waiting) showWaiting(waiting);
  for (const li of $("pending").children) li.querySelector(".left").textContent = left(li.deadline);
  try {
    const { closed } = await api("GET", "/v1/windows");
    place($("closed"), closedItems(closed));
    $("none-closed").hidden = closed.length > 0;
  } catch (error) { say(error.message); }
}

for (const radio of document.querySelectorAll("input[name=level]")) radio.onchange = showSendWarning;
$("understand").onchange = showSendWarning;
$("window").onchange = showWindowStatement;

// The section is marked busy for assistive technology until a save has been shown whole.
async function saving(work) {
  saves++;
  $("ladder").setAttribute("aria-busy", "true");
  try { await work(); } catch (error) { say(error.message); }
  finally { $("ladder").removeAttribute("aria-busy"); }
}

$("save-level").onclick = () => saving(async () => {
  const level = chosenLevel();
  const body = { level, acknowledge: level === "send" ? ladder.send_means : null };
  const changed = await api("PUT", "/v1/ladder", body);
  ladder.settings = changed.settings;
  say(`Saved: ${changed.settings.default}.` +
      stoppedSends(changed.canceled_windows));
  showLevel();
  await showRooms();
  await refresh();
});

$("org-ceiling").onsubmit = (event) => {
  event.preventDefault();  // sent from here, as every form of the page
  saving(async () => {
    const set = await api("PUT", "/v1/ladder/ceiling", { level: $("ceiling-level").value || null });
    ladder = await api("GET", "/v1/ladder");
    showTerms();
    showLevel();
    await showRooms();
    say((set.level ? `Ceiling set: no agent of the org sends above ${set.level}.` : "Ceiling lifted.") +
      stoppedSends(set.canceled_windows));
  });
};

$("save-window").onclick = () => saving(async () => {
  const changed = await api("PUT", "/v1/ladder/window", { window: $("window").value });
  ladder.settings = changed.settings;
  say(`Saved: window ${changed.settings.window}.`);
});

signingIn(load);
setInterval(refresh, 1000);

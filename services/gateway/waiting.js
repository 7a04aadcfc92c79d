"use strict";
// The first page's list of what waits on the person, live, each item done from it.

// Each room's title by its id, to say where a waiting item is.
const titles = new Map();
const lookedFor = new Set();
// The message each item answers, by "<room> <seq>", read once: a stored message's words
// never change.
const answered = new Map();
const quoting = new Set();

const KINDS = {
  draft: "My agent's draft", confirmation: "My agent asks which reply",
  window: "Sending unless I act", ask: "My agent asks to act for me",
  layer_draft: "A change to my app", delivery: "Not delivered", question: "Asked of me",
  packet: "Mine to decide",
};

const LABELS = {
  send: "Send", discard: "Discard", stop: "Stop", decline: "Decline", approve: "Approve",
  keep: "Keep", replace: "Send my text instead", dismiss: "Dismiss", decided: "I've decided",
};

const DONE = {
  "window stop": "Stopped: nothing was sent.", "window edit": "Sent your version instead.",
  "window replace": "Sent your own text instead.", "draft send": "Sent.",
  "draft edit": "Sent your version.", "draft discard": "Discarded.",
  "confirmation edit": "Sent your version.", "confirmation decline": "Declined: nothing was sent.",
  "ask decline": "Declined: your agent may not.", "layer_draft keep": "Kept.",
  "layer_draft discard": "Discarded.", "delivery dismiss": "Dismissed.",
  "question pick": "Answered.", "question edit": "Answered in your words.",
  "question decline": "Declined.", "packet decided": "Marked decided: it leaves your list.",
};

function left(item) {
  if (!item.deadline) return "";
  const when = timeLeft(item.deadline);
  if (item.kind === "layer_draft") {  // committed by itself at a window's end, else dropped
    return item.detail.at_deadline === "commits" ? `Goes in ${when} unless you act.`
      : `Dropped in ${when} unless you keep it.`;
  }
  return {
    window: `Sends in ${when} unless you act.`, ask: `Declined in ${when} unless you answer.`,
    question: `Closes in ${when}: no answer counts after.`,
  }[item.kind] || `${when} left.`;
}

function whereIs(item) {
  return titles.has(item.room) ? `In ${titles.get(item.room)}` : "";
}

function answers(item) {
  const seq = item.detail && item.detail.reply_to;
  return item.room && seq ? `${item.room} ${seq}` : null;
}

// Someone of the org by their name, a line's correspondent by their number or address.
function named(author) {
  return author.includes("/") ? author.split("/").pop()  // "acme/bob": bob
    : author.slice(author.indexOf(":") + 1);  // "sms:+15551234567": the number
}

// Who wrote what an item answers, and what; or who asks a question (a bot is named by its
// room's title, where the item says it waits).
function quoted(item) {
  if (item.kind === "question") {
    return item.detail.author.startsWith("bot:") ? "" : `From ${named(item.detail.author)}`;
  }
  const m = answered.get(answers(item));
  if (!m) return "";
  const text = m.text.length > 140 ? `${m.text.slice(0, 139)}…` : m.text;
  return `Answers ${named(m.author)}: “${text}”`;
}

async function readAnswered(key) {
  const [room, seq] = key.split(" ");
  const { messages } = await api("GET", `/v1/rooms/${room}/messages?after=${seq - 1}&limit=1`);
  answered.set(key, messages.find((m) => m.seq === Number(seq)));
  for (const li of $("pending").children) li.querySelector(".answers").textContent = quoted(li.deadline);
}

function label(item, action) {
  if (item.kind === "question" && action.name.startsWith("pick ")) {  // the option itself
    return item.candidates[action.body.choice.option];
  }
  if (item.kind === "question" && action.name === "edit") return "Answer in my words";
  if (action.name.startsWith("pick ")) {  // numbered as the list of candidates shows them
    return (item.candidates || []).length > 1 ? `Send: ${action.body.choice.option + 1}` : "Send";
  }
  if (action.name === "edit") return item.kind === "window" ? "Send my version instead" : "Send my version";
  return LABELS[action.name] || action.name;
}

function waitingItem(item) {
  const li = document.createElement("li");
  li.dataset.kind = item.kind;
  li.dataset.id = item.id;
  if (item.kind === "window") li.dataset.window = item.id;
  const kind = document.createElement("p");
  kind.className = "kind";
  kind.textContent = KINDS[item.kind] || item.kind;
  const where = document.createElement("p");
  where.className = "room";
  where.textContent = whereIs(item);
  const answering = document.createElement("p");
  answering.className = "answers";
  answering.textContent = quoted(item);
  const text = document.createElement("p");
  text.className = "text";
  text.textContent = item.text;
  li.append(kind, where, answering, text);
  if (item.kind !== "question" && item.candidates && item.candidates.length > 1) {
    const options = document.createElement("ol");
    options.className = "candidates";
    options.append(...item.candidates.map((c) => Object.assign(document.createElement("li"), { textContent: c })));
    li.append(options);
  }
  if (item.kind === "layer_draft") {  // its ops are drawn there, over the layer it changes
    const see = Object.assign(document.createElement("p"), { className: "see" });
    const whose = item.detail.layer === "org" ? "my org's app" : "my app";
    see.append(Object.assign(document.createElement("a"), {
      href: `/console/layout#draft-${item.id}`, textContent: `See each change on how ${whose} is arranged`,
    }));
    li.append(see);
  }
  if (item.kind === "delivery") {
    const why = document.createElement("p");
    why.className = "why";
    why.textContent = `Your ${item.detail.transport} did not arrive` +
      (item.detail.error ? `: ${item.detail.error}.` : ".");
    li.append(why);
  }
  const due = document.createElement("p");
  due.className = "left";
  due.textContent = left(item);
  li.append(due);
  const editable = item.actions.some((a) => JSON.stringify(a.body || {}).includes('"text"'));
  const mine = document.createElement("textarea");
  mine.value = item.kind === "question" ? "" : item.text;  // an answer is the person's own
  mine.setAttribute("aria-label", item.kind === "question" ? "my answer" : "my version");
  if (editable) li.append(mine);
  for (const action of item.actions) {
    const button = document.createElement("button");
    button.textContent = label(item, action);
    button.onclick = () => act(item, action, mine.value);
    li.append(button);
  }
  li.deadline = item;
  return li;
}

function withText(body, text) {
  if (!body) return body;
  const copy = JSON.parse(JSON.stringify(body));
  if ("text" in copy) copy.text = text;
  if (copy.choice && "text" in copy.choice) copy.choice.text = text;
  return copy;
}

async function act(item, action, text) {
  try {
    const done = await api(action.method, action.path, withText(action.body, text));
    const key = `${item.kind} ${action.name.split(" ")[0]}`;
    const said = item.kind === "ask" && action.name === "approve"
      ? (done.state === "allowed" ? "Approved: your agent may go ahead." : `Denied: ${done.decision.rule_id}.`)
      : DONE[key] || "Sent.";
    say(said);
    document.querySelector(`#pending li[data-id="${item.id}"]`)?.remove();
    $("none").hidden = $("pending").children.length > 0;
    return done;
  } catch (error) { say(error.message); }
}

let waiting = null;  // a list not yet shown, held while the person writes in the one shown

// An item as it stands, less what says only when it was read (a window's seconds left).
const standing = (item) => JSON.stringify({ ...item, detail: { ...item.detail, seconds_left: undefined } });

function showWaiting(items) {
  waiting = items;
  // Where each waits, by its room's title (a room made since the titles were read is
  // looked for once, and named once found), and the message it answers.
  readOnce(items.filter((i) => i.room && !titles.has(i.room)).map((i) => i.room), lookedFor,
    readTitles);
  for (const key of items.map(answers)) readOnce([key], quoting, () => readAnswered(key));
  const editing = document.activeElement && document.activeElement.matches("#pending textarea");
  if (editing) return;
  // An item as it was stays the element it was, where it was: one replaced as another
  // arrived lost the click pressed on it (a Stop on a window that then sent). What the
  // person wrote in a changed item and has not sent outlives it drawn again.
  const list = $("pending");
  const shown = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const drawn = items.map((item) => {
    const before = shown.get(item.id);
    if (before && standing(before.deadline) === standing(item)) return before;
    const li = waitingItem(item);
    const mine = li.querySelector("textarea"), theirs = before && before.querySelector("textarea");
    if (mine && theirs && theirs.value !== before.deadline.text) mine.value = theirs.value;
    return li;
  });
  place(list, drawn);
  $("none").hidden = items.length > 0;
  waiting = null;
}

// The list, live. The status line stays the person's: the list says when it is away.
function followWaiting() {
  follow("/v1/pending/stream", (event, data) => {
    $("away").hidden = event !== "unavailable";
    if (event !== "pending") return;
    const { items, more } = JSON.parse(data);
    showWaiting(items);
    $("more").hidden = !more;
  }, (gone) => { if (gone) $("away").hidden = false; });
}

// The rooms, their titles kept and the waiting items drawn named by them.
// Read once what items name that the page does not know yet: `asked` holds what is being
// or was read; what a failed read asked for is forgotten, to be asked with the next list.
function readOnce(keys, asked, read) {
  const fresh = [...new Set(keys)].filter((key) => key && !asked.has(key));
  if (!fresh.length) return;
  for (const key of fresh) asked.add(key);
  read().catch((error) => {
    for (const key of fresh) asked.delete(key);
    say(error.message);
  });
}

async function readTitles() {
  const rooms = await everyPage("/v1/rooms?limit=200", "rooms");
  for (const room of rooms) titles.set(room.id, room.title);
  for (const li of $("pending").children) li.querySelector(".room").textContent = whereIs(li.deadline);
  return rooms;
}

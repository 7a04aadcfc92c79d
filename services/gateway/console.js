"use strict";
// What every console page shares: the token, the API called with it, the status line.
let token = sessionStorage.getItem("tether-token") || "";
const $ = (id) => document.getElementById(id);

// A token the gateway refused (401: expired, say) is not sent again. Every call and stream
// waits for another to be pasted, rather than asking once a second while the page is open.
let refusedToken = null;
const REFUSED = "Your token is no longer taken: paste a new one.";

function refused(sent) {
  refusedToken = sent;
  $("signin").hidden = false;
  say(REFUSED);
}

// A transient failure (the gateway's 502 to 504, its key still in progress, or no answer
// at all) is asked again for some 15 s, a POST or DELETE with the same Idempotency-Key:
// one that ran before its answer was lost is answered as it was, never carried out twice,
// and the person's click is not lost to a moment's outage.
const AGAIN_MS = [250, 500, 1000, 2000, 4000, 8000];

function transient(response, problem) {
  return [502, 503, 504].includes(response.status) ||
    (response.status === 409 && problem.type === "urn:tether:problem:idempotency-key-in-use");
}

function newKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0")).join("");
}

async function api(method, path, body) {
  const sent = token;
  if (sent === refusedToken) throw new Error(REFUSED);
  const headers = { "Authorization": "Bearer " + sent, "Content-Type": "application/json" };
  if (method === "POST" || method === "DELETE") headers["Idempotency-Key"] = newKey();
  const request = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
  let response;
  for (const wait of [...AGAIN_MS, null]) {
    try {
      response = await fetch(path, request);
      const problem = response.ok ? {} : await response.clone().json().catch(() => ({}));
      if (wait === null || !transient(response, problem)) break;
    } catch (error) {
      if (wait === null) throw error;
    }
    say("The service is away for a moment: trying again.");
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  if (response.status === 401) refused(sent);
  if (response.status === 204) return null;
  const data = await response.json();
  if (!response.ok) {
    throw Object.assign(new Error(data.detail || data.title || response.statusText),
      { status: response.status, type: data.type });
  }
  return data;
}

function say(text) { $("status").textContent = text; }

const pause = () => new Promise((resolve) => setTimeout(resolve, 1000));

// A stream of server-sent events, read with fetch (it carries the token in a header, which
// EventSource cannot), and opened again a second after it ends or fails (a gateway
// restarted, the bus away), or once another token is pasted if its own was refused:
// `each(event, data)` for every event, `away(true)` while it is not open and `away(false)`
// once it is again.
async function follow(path, each, away) {
  for (;;) {
    while (token === refusedToken) await pause();
    const sent = token;
    try {
      const response = await fetch(path, { headers: { "Authorization": "Bearer " + sent } });
      if (response.status === 401) refused(sent);
      if (!response.ok) throw new Error((await response.json()).detail);
      away(false);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const lines = buffer.slice(0, end).split("\n");
          buffer = buffer.slice(end + 2);
          const event = (lines.find((l) => l.startsWith("event: ")) || "").slice(7);
          const data = (lines.find((l) => l.startsWith("data: ")) || "").slice(6);
          if (event === "refused" && JSON.parse(data).status === 401) refused(sent);
          else if (event) await each(event, data);
        }
      }
    } catch { /* opened again below */ }
    away(true);
    await pause();
  }
}

// How long until `deadline`, as a person says it: "45 s", "59 min", "24 h".
function timeLeft(deadline) {
  const seconds = Math.max(0, Math.ceil((Date.parse(deadline) - Date.now()) / 1000));
  return seconds < 120 ? `${seconds} s`
    : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
}

// Signing in: with the token pasted (a form, so that Enter signs in too; never sent
// anywhere by the browser, as the page's policy lets no form go, only read here), or at
// once with the one this tab signed in with on another of the console's pages.
function signingIn(start) {
  // A link to a part of a page (`/console#ladder`) is followed once the page is drawn:
  // hidden until the person is signed in, the browser may have found nothing to scroll to.
  const started = () => {
    for (const link of document.querySelectorAll("nav [data-admin]")) link.hidden = !admin();
    return start()
      .then(() => location.hash && $(location.hash.slice(1))?.scrollIntoView())
      .catch((error) => say(error.message));
  };
  $("signin").onsubmit = (event) => {
    event.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("tether-token", token);
    started();
  };
  if (token) started();
}

// What the token says of the person, for what a page offers them alone and how it names
// them: the gateway decides what they may do, whatever this says.
function claims() {
  try {
    return JSON.parse(atob(token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")));
  } catch { return {}; }
}

const admin = () => (claims().roles || []).includes("admin");

// Every item of a paged list: each page of `path`'s `field` (after `from`, if given), the
// next after the last's `next`.
async function everyPage(path, field, from = null) {
  const found = [], joined = path.includes("?") ? "&" : "?";
  let after = from;
  do {
    const page = await api("GET", after ? `${path}${joined}after=${encodeURIComponent(after)}` : path);
    found.push(...page[field]);
    after = page.next;
  } while (after);
  return found;
}

function item(text, className = "") {
  return Object.assign(document.createElement("li"), { textContent: text, className });
}

function button(label, onclick) {
  return Object.assign(document.createElement("button"), { textContent: label, onclick });
}

// `list` made to hold `drawn` in order, an element already there left where it is: one
// taken away and put back loses a click pressed on it, and the text selected in it.
function place(list, drawn) {
  drawn.forEach((element, i) => {
    if (list.children[i] !== element) list.insertBefore(element, list.children[i] || null);
  });
  while (list.children.length > drawn.length) list.lastElementChild.remove();
}

// The elements for a list read again: each thing as it was drawn before (by `key`) the
// element it was, the others made; what is no longer listed is forgotten.
function keeper(key, make) {
  let drawn = new Map();
  return (things) => {
    drawn = new Map(things.map((thing) => {
      const at = key(thing);
      return [at, drawn.get(at) || make(thing)];
    }));
    return [...drawn.values()];
  };
}

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

async function api(method, path, body) {
  const sent = token;
  if (sent === refusedToken) throw new Error(REFUSED);
  const response = await fetch(path, {
    method,
    headers: { "Authorization": "Bearer " + sent, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) refused(sent);
  if (response.status === 204) return null;
  const data = await response.json();
  if (!response.ok) throw new Error(data.detail || data.title || response.statusText);
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

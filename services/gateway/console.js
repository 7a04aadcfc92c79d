"use strict";
// What every console page shares: the token, the API called with it, the status line.
let token = sessionStorage.getItem("tether-token") || "";
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json();
  if (!response.ok) throw new Error(data.detail || data.title || response.statusText);
  return data;
}

function say(text) { $("status").textContent = text; }

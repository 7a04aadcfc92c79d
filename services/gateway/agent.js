"use strict";
// The first page's part on who the person's agent is (HIP-0524 §12): the persona it wears,
// read from the library; the preferences it drafts with, the person's own document, which
// they alone write; and the lines it answers on.

const PREFERENCES = ["display_name", "tone", "signature", "instructions"];

async function showAgent() {
  const mine = await api("GET", "/v1/agents/me").catch((error) => {
    if (error.status === 404) return null;
    throw error;
  });
  if (mine) {  // filled before it shows, so nothing the person writes there is written over
    const preferences = await api("GET", "/v1/preferences");
    for (const field of PREFERENCES) $(`pref-${field}`).value = preferences[field];
  }
  $("no-agent").hidden = mine !== null;
  $("preferences").hidden = mine === null;
  $("persona").textContent = mine ? `Its persona is “${mine.persona.name}”. ${mine.persona.description}` : "";
  if (!mine) {
    await showPersonas();
    return;
  }
  await showLines();
}

// The org's library, to make the agent from: "self" first, as the person's own.
async function showPersonas() {
  const listed = (await everyPage("/v1/agents/personas", "personas")).map((p) => p.persona);
  listed.sort((a, b) => (b.name === "self") - (a.name === "self"));
  $("make-persona").replaceChildren(...listed.map((p) => new Option(`${p.name}: ${p.description}`, p.name)));
}

const TRANSPORTS = { sms: "SMS", whatsapp: "WhatsApp", email: "Email", voice: "Calls" };

// The person's lines: a connected one with Disconnect, one claimed with where to enter the
// code its carrier delivered (a WhatsApp line with the verify token Meta's callback needs).
async function showLines() {
  const { lines } = await api("GET", "/v1/lines");
  $("no-lines").hidden = lines.length > 0;
  $("lines").replaceChildren(...lines.map((line) => {
    const li = document.createElement("li");
    li.dataset.transport = line.transport;
    const what = document.createElement("p");
    what.textContent = `${TRANSPORTS[line.transport]} ${line.address}: ` +
      (line.state === "connected" ? "connected" : "waiting for the code sent to it");
    li.append(what);
    if (line.verify_token) {
      li.append(Object.assign(document.createElement("p"),
        { textContent: `Verify token for Meta's callback: ${line.verify_token}` }));
    }
    if (line.state === "pending") {
      const code = Object.assign(document.createElement("input"),
        { inputMode: "numeric", maxLength: 6, autocomplete: "one-time-code" });
      code.setAttribute("aria-label", "the code");
      li.append(code, button("Prove it", () => lineAct("Connected.", "POST",
        `/v1/lines/${line.transport}/verify`, { code: code.value.trim() })));
    }
    li.append(button("Disconnect", () => lineAct("Disconnected.", "DELETE", `/v1/lines/${line.transport}`)));
    return li;
  }));
}

async function lineAct(done, method, path, body) {
  try {
    await api(method, path, body);
    say(done);
  } catch (error) { say(error.message); }
  await showLines().catch((error) => say(error.message));
}

$("preferences").onsubmit = async (event) => {
  event.preventDefault();  // the page's policy lets no form go anywhere: sent from here
  try {
    await api("PUT", "/v1/preferences",
      Object.fromEntries(PREFERENCES.map((field) => [field, $(`pref-${field}`).value])));
    say("Saved: your agent drafts with these from its next reply.");
  } catch (error) { say(error.message); }
};

$("line-transport").onchange = () => { $("line-forward").hidden = $("line-transport").value !== "voice"; };

$("connect").onsubmit = async (event) => {
  event.preventDefault();  // sent from here, as every form of the page
  const body = { transport: $("line-transport").value, address: $("line-address").value.trim(),
                 credential: $("line-credential").value };
  if (body.transport === "voice" && $("line-forward-to").value.trim()) body.forward_to = $("line-forward-to").value.trim();
  await lineAct(`A code was sent to ${body.address}: enter it above.`, "POST", "/v1/lines", body);
  $("line-credential").value = "";
};

$("make-agent").onclick = async () => {
  try {
    await api("POST", "/v1/agents/me", { persona: $("make-persona").value });
    say("Your agent is made.");
    await showAgent();
  } catch (error) { say(error.message); }
};

// The business portal's only script: the WebAuthn calls a passkey needs
// (create, sign in, seal). Everything else is plain HTML forms.
"use strict";

const b64urlToBytes = (text) => {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(b64 + "===".slice((b64.length + 3) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
};

const bytesToB64url = (buffer) => {
  let raw = "";
  for (const b of new Uint8Array(buffer)) raw += String.fromCharCode(b);
  return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

const say = (text) => {
  const message = document.getElementById("message");
  if (message) message.textContent = text;
};

// POSTs JSON and answers the JSON reply; a problem (RFC 9457) is thrown
// with its detail, which the page shows.
const post = async (url, body, csrf) => {
  const headers = { "content-type": "application/json" };
  if (csrf) headers["x-csrf-token"] = csrf;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
  const reply = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(reply.detail || reply.title || `refused (${response.status})`);
  return reply;
};

const creationOptions = (options) => {
  const pk = structuredClone(options.publicKey);
  pk.challenge = b64urlToBytes(pk.challenge);
  pk.user.id = b64urlToBytes(pk.user.id);
  for (const c of pk.excludeCredentials || []) c.id = b64urlToBytes(c.id);
  return { publicKey: pk };
};

const requestOptions = (options) => {
  const pk = structuredClone(options.publicKey);
  pk.challenge = b64urlToBytes(pk.challenge);
  for (const c of pk.allowCredentials || []) c.id = b64urlToBytes(c.id);
  return { publicKey: pk };
};

const assertionJson = (credential) => ({
  id: credential.id,
  rawId: bytesToB64url(credential.rawId),
  type: credential.type,
  response: {
    authenticatorData: bytesToB64url(credential.response.authenticatorData),
    clientDataJSON: bytesToB64url(credential.response.clientDataJSON),
    signature: bytesToB64url(credential.response.signature),
    userHandle: credential.response.userHandle ? bytesToB64url(credential.response.userHandle) : null,
  },
  extensions: {},
});

const attach = (id, run) => {
  const form = document.getElementById(id);
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    say("Waiting for your passkey…");
    try {
      await run(form);
    } catch (error) {
      say(error.message || String(error));
      button.disabled = false;
    }
  });
};

// An invited person creates their passkey.
attach("register", async (form) => {
  const name = form.querySelector("[name=name]").value;
  const begun = await post(form.dataset.begin, { name });
  const credential = await navigator.credentials.create(creationOptions(begun.options));
  const done = await post(form.dataset.finish, {
    ceremony: begun.ceremony,
    credential: {
      id: credential.id,
      rawId: bytesToB64url(credential.rawId),
      type: credential.type,
      response: {
        attestationObject: bytesToB64url(credential.response.attestationObject),
        clientDataJSON: bytesToB64url(credential.response.clientDataJSON),
      },
      extensions: {},
    },
  });
  window.location.assign(done.next);
});

// A person signs in.
attach("sign-in", async (form) => {
  const email = form.querySelector("[name=email]").value;
  const begun = await post(form.dataset.begin, { email });
  const credential = await navigator.credentials.get(requestOptions(begun.options));
  const done = await post(form.dataset.finish, { ceremony: begun.ceremony, credential: assertionJson(credential) });
  window.location.assign(done.next);
});

// A person seals a save: the challenge binds the seal's payload.
attach("seal", async (form) => {
  const options = JSON.parse(form.dataset.options);
  const credential = await navigator.credentials.get(requestOptions(options));
  const answer = assertionJson(credential).response;
  const done = await post(
    form.dataset.finish,
    {
      authenticator_data: answer.authenticatorData,
      client_data_json: answer.clientDataJSON,
      signature: answer.signature,
    },
    form.dataset.csrf,
  );
  window.location.assign(done.next);
});

// Each moment the server wrote in UTC, in the browser's own time zone (the
// UTC form stays as the element's title).
const localTimes = () => {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  for (const time of document.querySelectorAll("time[datetime]")) {
    const at = new Date(time.dateTime);
    if (Number.isNaN(at.getTime()) || time.dataset.local) continue;
    time.title = time.textContent;
    time.textContent = format.format(at);
    time.dataset.local = "1";
  }
};
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", localTimes);
else localTimes();

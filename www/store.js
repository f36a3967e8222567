// What the chat keeps across a reload, under the model's name: the conversation in
// localStorage (a few kilobytes of text) and the KV cache in IndexedDB (`engine.saveSession()`
// bytes, megabytes), so a reloaded page continues without evaluating the history again.
const PREFIX = "kopitiam-chat:";

export function loadConversation(model) {
  try {
    const v = JSON.parse(localStorage.getItem(PREFIX + model) ?? "null");
    return v && Array.isArray(v.messages) ? v : null;
  } catch {
    return null;
  }
}

export function saveConversation(model, conversation) {
  localStorage.setItem(PREFIX + model, JSON.stringify(conversation));
}

function database() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open("kopitiam", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("sessions");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function transact(mode, action) {
  const db = await database();
  try {
    return await new Promise((resolve, reject) => {
      const req = action(db.transaction("sessions", mode).objectStore("sessions"));
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  } finally {
    db.close();
  }
}

/** The saved KV cache of `model`, or null. */
export function loadSessionBytes(model) {
  return transact("readonly", (s) => s.get(model)).then((v) => v ?? null, () => null);
}

export function saveSessionBytes(model, bytes) {
  return transact("readwrite", (s) => s.put(bytes, model));
}

/** Forgets both halves. */
export async function forget(model) {
  localStorage.removeItem(PREFIX + model);
  await transact("readwrite", (s) => s.delete(model)).catch(() => {});
}

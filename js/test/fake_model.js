// A stand-in for anywidget's model: get/set/on/off/send, and a way to push custom messages.
export class FakeModel {
  constructor(state = {}) {
    this.state = { ...state };
    this.handlers = new Map();
    this.sent = [];
  }

  get(name) {
    return this.state[name];
  }

  // Like a kernel sync: set every key, then fire one change event per key.
  update(changes) {
    Object.assign(this.state, changes);
    for (const name of Object.keys(changes)) this.emit(`change:${name}`);
  }

  set(name, value) {
    this.update({ [name]: value });
  }

  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(fn);
  }

  off(event, fn) {
    this.handlers.get(event)?.delete(fn);
  }

  emit(event, ...args) {
    for (const fn of this.handlers.get(event) ?? []) fn(...args);
  }

  send(message) {
    this.sent.push(message);
  }

  custom(message) {
    this.emit("msg:custom", message, []);
  }

  listenerCount() {
    let n = 0;
    for (const set of this.handlers.values()) n += set.size;
    return n;
  }
}

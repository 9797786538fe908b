// Mojodex web client: pick a task, fill its form, follow the assistant live over Socket.IO.
"use strict";

const api = window.MOJODEX_API || window.location.origin;
const state = { token: localStorage.getItem("mojodex_token") || "", socket: null, execution: null,
  lastSeq: 0, streaming: null, producedTextPk: null, versionIndex: 0, versionCount: 0 };
const $ = (id) => document.getElementById(id);

async function call(method, path, body) {
  const response = await fetch(api + path, {
    method, headers: { "Authorization": "Bearer " + state.token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// A multipart POST: the JSON fields as text, each file under its input's name.
async function upload(path, body, files) {
  const form = new FormData();
  for (const [name, value] of Object.entries(body)) form.append(name, typeof value === "object" ? JSON.stringify(value) : value);
  for (const [name, file] of Object.entries(files)) form.append(name, file);
  const response = await fetch(api + path, { method: "POST", headers: { "Authorization": "Bearer " + state.token }, body: form });
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function showError(error) { $("error").textContent = error ? String(error.message || error) : ""; }

async function signIn() {
  state.token = $("token").value.trim() || state.token;
  try {
    const { user_tasks } = await call("GET", "/user_task?platform=webapp");
    localStorage.setItem("mojodex_token", state.token);
    $("login").hidden = true; $("app").hidden = false;
    $("tasks").replaceChildren(...user_tasks.map((task) => {
      const item = document.createElement("li"), button = document.createElement("button");
      button.textContent = `${task.icon || ""} ${task.name}`;
      button.onclick = () => openTask(task);
      item.append(button); return item;
    }));
    connectSocket();
  } catch (error) { showError(error); }
}

function connectSocket() {
  state.socket = io(api, { auth: { token: state.token }, transports: ["websocket"] });
  state.socket.on("connect", () => { if (state.execution) joinSession(); });
  state.socket.onAny((event, payload) => handleEvent(event, payload));
}

function joinSession() {
  state.socket.emit("start_session", { session_id: state.execution.session_id, last_seq: state.lastSeq },
    (ack) => { if (ack && ack.error) showError(ack.error); });
}

async function openTask(task) {
  showError("");
  const execution = await call("PUT", "/user_task_execution", { user_task_pk: task.user_task_pk, platform: "webapp" });
  Object.assign(state, { execution, lastSeq: 0, streaming: null, producedTextPk: null });
  $("task-name").textContent = task.name; $("task-description").textContent = task.description;
  $("inputs").replaceChildren(...execution.json_input.map(inputField));
  $("task-form").hidden = false; $("conversation").hidden = true; $("draft").hidden = true;
  $("messages").replaceChildren(); $("order").hidden = true;
  joinSession();
  // An order task has no form: it starts at once and its greeting is the first message.
  if (task.type === "order" || execution.order) await runExecution({});
}

function inputField(input) {
  const label = document.createElement("label");
  label.textContent = input.description_for_user;
  let field;
  if (["video", "audio_file", "image"].includes(input.type)) {
    field = document.createElement("input");
    field.type = "file";  // a workflow's recording or transcript (.txt, .vtt, .srt)
  } else if (input.type === "drop_down_list") {
    field = document.createElement("select");
    for (const option of input.possible_values) field.append(new Option(option.displayed_text, option.value));
  } else {
    field = document.createElement("textarea");
    field.placeholder = input.placeholder || "";
  }
  field.name = input.input_name; label.append(field); return label;
}

async function runExecution(inputs, files = {}) {
  const body = { user_task_execution_pk: state.execution.user_task_execution_pk };
  if (Object.keys(inputs).length) body.inputs = inputs;
  try {
    if (Object.keys(files).length) await upload("/user_task_execution_run", body, files);
    else await call("POST", "/user_task_execution_run", body);
    $("task-form").hidden = true; $("conversation").hidden = false;
  } catch (error) { showError(error); }
}

async function startTask(event) {
  event.preventDefault(); showError("");
  const inputs = {}, files = {};
  for (const field of $("inputs").querySelectorAll("[name]")) {
    if (field.type === "file") { if (field.files.length) files[field.name] = field.files[0]; }
    else inputs[field.name] = field.value;
  }
  await runExecution(inputs, files);
}

function showOrder(payload) {
  const order = payload.order || {};
  const lines = (order.items || []).filter((item) => item.status !== "skipped")
    .map((item) => `${item.summary || item.item_type}  ${item.line_total ?? ""}`);
  lines.push(`total ${order.total ?? 0} ${order.currency || ""}   (${payload.state})`);
  $("order").textContent = lines.join("\n"); $("order").hidden = false;
}

async function sendMessage(event) {
  event.preventDefault();
  const text = $("chat-text").value.trim();
  if (!text) return;
  $("chat-text").value = "";
  try {
    await call("PUT", "/user_message", { session_id: state.execution.session_id,
      user_task_execution_pk: state.execution.user_task_execution_pk, text, message_id: crypto.randomUUID() });
  } catch (error) { showError(error); }
}

function addMessage(kind, text) {
  const item = document.createElement("li");
  item.className = kind; item.textContent = text; $("messages").append(item); return item;
}

function handleEvent(event, payload) {
  if (!state.execution || !payload || payload.session_id !== state.execution.session_id) return;
  if (payload.seq <= state.lastSeq) return;
  state.lastSeq = payload.seq;
  $("conversation").hidden = false; $("task-form").hidden = true;
  if (event === "user_message_reception") addMessage("user", payload.text);
  else if (event === "mojo_token") {
    state.streaming = state.streaming || addMessage("assistant", "");
    state.streaming.textContent += payload.delta;
  } else if (event === "draft_token") {
    $("draft").hidden = false;
    $(payload.part === "title" ? "draft-title" : "draft-body").textContent += payload.delta;
  } else if (event === "mojo_message") {
    const item = state.streaming || addMessage("assistant", "");
    item.textContent = payload.text; state.streaming = null;
    if (payload.task_tool_execution_pk) item.append(approvalButtons(payload.task_tool_execution_pk));
  } else if (event.startsWith("workflow_step_execution_")) {
    showStep(event, payload);
  } else if (event === "draft_message" || event === "workflow_execution_produced_text") {
    if (state.streaming) { state.streaming.remove(); state.streaming = null; }
    addMessage("assistant", `New version ${payload.produced_text_version_index} of "${payload.produced_text_title}"`);
    state.producedTextPk = payload.produced_text_pk;
    showVersion(payload.produced_text_version_index);
  } else if (event === "order_state") {
    showOrder(payload);
  } else if (event === "order_ticket") {
    addMessage("assistant", (payload.ticket && payload.ticket.text) || "Order ticket created");
  } else if (event === "error") {
    if (state.streaming) { state.streaming.remove(); state.streaming = null; }
    addMessage("error", payload.error);
  }
}

// Workflow steps: one line per step execution, with Validate / Reject, or Relaunch when it failed.
function showStep(event, step) {
  const id = "step-" + step.user_workflow_step_execution_pk;
  const item = document.getElementById(id) || addMessage("assistant", "");
  item.id = id;
  if (event === "workflow_step_execution_invalidated") { item.className = "step-gone"; return; }
  const result = step.result ? "\n" + step.result.map((r) => Object.values(r).join("\n")).join("\n") : "";
  item.textContent = `Step ${step.rank} ${step.step_name_for_system}: ${step.status}${step.error ? " - " + step.error : ""}${result}`;
  const buttons = [];
  if (step.status === "done" && step.validated === null) buttons.push(["Validate", { validated: true }, "POST"], ["Reject", { validated: false }, "POST"]);
  if (step.status === "failed") buttons.push(["Relaunch", {}, "PUT"]);
  const box = document.createElement("div");
  for (const [label, extra, method] of buttons) {
    const button = document.createElement("button");
    button.textContent = label;
    button.onclick = async () => {
      try {
        await call(method, "/user_workflow_step_execution", { user_workflow_step_execution_pk: step.user_workflow_step_execution_pk, ...extra });
        box.replaceChildren(label === "Reject" && step.review_chat_enabled ? "Tell the assistant what to change below." : label);
      } catch (error) { showError(error); }
    };
    box.append(button);
  }
  if (buttons.length) item.append(box);
}

// A tool that needs the user's approval: one click approves or declines it, then the turn goes on.
function approvalButtons(pk) {
  const box = document.createElement("div");
  for (const [label, approved] of [["Approve", true], ["Decline", false]]) {
    const button = document.createElement("button");
    button.textContent = label;
    button.onclick = async () => {
      try {
        await call("POST", "/task_tool_execution", { task_tool_execution_pk: pk, approved });
        box.replaceChildren(approved ? "Approved" : "Declined");
      } catch (error) { showError(error); }
    };
    box.append(button);
  }
  return box;
}

async function showVersion(index) {
  if (!state.producedTextPk || index < 1) return;
  try {
    const version = await call("GET", `/produced_text?produced_text_pk=${state.producedTextPk}&produced_text_version_index=${index}`);
    state.versionIndex = version.produced_text_version_index; state.versionCount = version.produced_text_version_count;
    $("draft").hidden = false;
    $("draft-title").textContent = version.produced_text_title; $("draft-body").textContent = version.produced_text;
    $("version-label").textContent = ` version ${state.versionIndex} / ${state.versionCount} `;
  } catch (error) { showError(error); }
}

$("login-button").onclick = signIn;
$("task-form").onsubmit = startTask;
$("chat-form").onsubmit = sendMessage;
$("prev-version").onclick = () => showVersion(state.versionIndex - 1);
$("next-version").onclick = () => { if (state.versionIndex < state.versionCount) showVersion(state.versionIndex + 1); };
if (state.token) { $("token").value = state.token; signIn(); }

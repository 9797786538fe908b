// REST calls to the backend (same origin) and the translation of API errors into words for people.
import type { Texts } from "./i18n";

export class ApiError extends Error {
  constructor(
    public status: number,
    public raw: string,
    public field: string | null,
    public friendly: string,
    public extra: Record<string, unknown> = {},
  ) {
    super(friendly);
  }
}

/** "inputs.customer_message: is required" -> "Please fill in this field." (no API paths shown). */
export function fieldMessage(raw: string, t: Texts): string {
  const rule = raw.replace(/^[\w.[\]<>]+:\s*/, "").trim();
  if (/is required|must not be empty/.test(rule)) return t.required;
  if (/must be one of/.test(rule)) return t.chooseOne;
  if (/at most \d+ characters/.test(rule)) return t.tooLong;
  return sentence(rule);
}

function sentence(text: string): string {
  const cleaned = text.replace(/\b[a-z]+(_[a-z]+)+\b/g, (w) => w.replace(/_/g, " ")).trim();
  return cleaned ? cleaned[0].toUpperCase() + cleaned.slice(1) + (/[.!?]$/.test(cleaned) ? "" : ".") : "";
}

export function friendlyError(status: number, raw: string, field: string | null, t: Texts): string {
  if (status === 0) return t.errNetwork;
  if (status === 401) return raw === "wrong email or password" ? t.errWrongLogin : t.errAuth;
  if (status === 429) return t.errTooMany;
  if (status === 404) return t.errNotFound;
  if (status >= 500) return t.errServer;
  if (status === 409 && /already started/.test(raw)) return t.errBusy;
  if (field) return fieldMessage(raw, t);
  return sentence(raw.replace(/^[\w.[\]<>]+:\s*/, ""));
}

export interface Api {
  call<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  /** A multipart POST: each field as text (objects as JSON), each file under its input's name. */
  upload<T = any>(path: string, fields: Record<string, unknown>, files: Record<string, File>): Promise<T>;
}

export function makeApi(token: () => string, t: () => Texts, onUnauthorized: () => void): Api {
  const send = async (method: string, path: string, headers: Record<string, string>, body?: BodyInit) => {
    let response: Response;
    try {
      response = await fetch(path, { method, headers: { Authorization: `Bearer ${token()}`, ...headers }, body });
    } catch {
      throw new ApiError(0, "network", null, t().errNetwork);
    }
    return answer(response, path);
  };
  const answer = async (response: Response, path: string) => {
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const raw = String(data.error ?? response.statusText);
      const field = typeof data.field === "string" ? data.field : null;
      if (response.status === 401 && path !== "/login") onUnauthorized();
      throw new ApiError(response.status, raw, field, friendlyError(response.status, raw, field, t()), data);
    }
    return data;
  };
  return {
    call: (method, path, body) => send(method, path, { "Content-Type": "application/json" },
      body === undefined ? undefined : JSON.stringify(body)),
    upload: (path, fields, files) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) {
        form.append(name, typeof value === "object" ? JSON.stringify(value) : String(value));
      }
      for (const [name, file] of Object.entries(files)) form.append(name, file);
      return send("POST", path, {}, form);
    },
  };
}

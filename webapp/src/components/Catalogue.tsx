import { useState } from "react";
import type { Texts } from "../i18n";

export interface JsonInput {
  input_name: string;
  description_for_user: string;
  placeholder?: string;
  type: string;
  optional?: boolean;
  possible_values?: { value: string; displayed_text: string }[];
}

export interface UserTask {
  user_task_pk: number;
  name_for_system: string;
  type: string;
  icon: string | null;
  name: string;
  description: string;
  json_input: JsonInput[];
}

/** Accents and case do not matter in search ("etat" finds "État"). */
export function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{Diacritic}/gu, "").toLowerCase();
}

export function Catalogue({ t, tasks }: { t: Texts; tasks: UserTask[] }) {
  const [query, setQuery] = useState("");
  const shown = tasks.filter((task) => fold(`${task.name} ${task.description}`).includes(fold(query.trim())));
  return (
    <section className="catalogue">
      <h1>{t.tasks}</h1>
      <label className="search">{t.searchTasks}
        <input type="search" value={query} onChange={(e) => setQuery(e.target.value)} />
      </label>
      <ul className="task-grid">
        {shown.map((task) => (
          <li key={task.user_task_pk}>
            <a href={`#/task/${task.user_task_pk}`} className="task-card" data-task={task.name_for_system}>
              <span className="icon" aria-hidden="true">{task.icon ?? "•"}</span>
              <span className="name">{task.name}</span>
              <span className="description">{task.description}</span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

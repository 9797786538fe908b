// The live progress tree of an order (seed 000): items with their fields filled or missing,
// status icons and prices; delivery, customer info, payment; the state, total and ticket.
import type { Texts } from "../i18n";
import type { OrderSnapshot } from "../session";

// Plain symbols (present in common fonts, unlike emoji): done, in progress, to do, removed.
const ICONS: Record<string, string> = { complete: "✔", in_progress: "◔", pending: "○", skipped: "✖" };

function money(value: unknown, currency: string): string {
  const amount = Number(value ?? 0);
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency: currency || "USD" }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`} role="img" aria-label={status}>{ICONS[status] ?? "○"}</span>;
}

export function OrderPanel({ t, order, ticket }: {
  t: Texts; order: OrderSnapshot | null; ticket: Record<string, any> | null;
}) {
  if (!order) return null;
  const o = order.order;
  const currency = String(o.currency ?? "USD");
  const statuses: Record<string, string> = o.statuses ?? {};
  const items: any[] = o.items ?? [];
  return (
    <aside className="order" aria-label={t.order} data-state={order.state}>
      <h2>{t.order}</h2>
      <p className="conversation-state">{t.conversationState}: <strong>{order.state}</strong></p>
      <ul className="order-tree">
        {items.map((item) => (
          <li key={item.index} className={`order-item item-${item.status}`} data-testid="order-item">
            <div className="order-line">
              <Status status={item.status} />
              <span className="summary">{item.summary}</span>
              <span className="price">{money(item.line_total, currency)}</span>
            </div>
            <ul className="fields">
              {Object.entries(item.fields ?? {}).filter(([, v]) => v !== null && v !== "" && !(Array.isArray(v) && !v.length))
                .map(([name, value]) => (
                  <li key={name} className="field-filled">{name.replace(/_/g, " ")}: {Array.isArray(value)
                    ? value.map((v: any) => (typeof v === "object" ? v.name ?? JSON.stringify(v) : v)).join(", ")
                    : String(value)}</li>
                ))}
              {(item.missing ?? []).map((name: string) => (
                <li key={name} className="field-missing">{t.missing}: {name.replace(/_/g, " ")}</li>
              ))}
            </ul>
          </li>
        ))}
        <li className="order-part" data-testid="order-delivery">
          <Status status={statuses.delivery_method ?? (o.order_type ? "complete" : "pending")} /> {t.delivery}:{" "}
          {o.order_type ? `${o.order_type}${o.address ? ` — ${o.address}` : ""}` : "—"}
        </li>
        <li className="order-part" data-testid="order-customer">
          <Status status={statuses.customer_info ?? (o.customer_name ? "complete" : "pending")} /> {t.customer}:{" "}
          {[o.customer_name, o.customer_contact].filter(Boolean).join(", ") || "—"}
        </li>
        <li className="order-part" data-testid="order-payment">
          <Status status={statuses.payment ?? (o.payment_method ? "complete" : "pending")} /> {t.payment}:{" "}
          {o.payment_method ?? "—"}
        </li>
      </ul>
      <p className="total" data-testid="order-total">{t.total}: <strong>{money(o.total, currency)}</strong></p>
      <progress max={1} value={Number(o.progress ?? 0)} aria-label="progress" />
      {ticket && (
        <section className="ticket" aria-label={t.ticket}>
          <h3>{t.ticket} {ticket.ticket_id ?? ""}</h3>
          <pre>{String(ticket.text ?? "")}</pre>
        </section>
      )}
    </aside>
  );
}

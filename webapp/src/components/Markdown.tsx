// Assistant text as Markdown. react-markdown builds React elements and never injects raw HTML
// (no rehype-raw): a <script> in a reply is shown as text, never run. Protocol tags are removed.
import ReactMarkdown from "react-markdown";

const PROTOCOL_TAGS =
  /<\/?(execution|title|draft|reasoning|ask_user_primary_info|user_language|tool_call|tool_explanation|no_go_explanation|response|message)>/g;

export function stripTags(text: string): string {
  return text.replace(/<user_language>[^<]*<\/user_language>/g, "").replace(/<reasoning>[\s\S]*?(<\/reasoning>|$)/g, "")
    .replace(PROTOCOL_TAGS, "");
}

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown skipHtml>{stripTags(text)}</ReactMarkdown>
    </div>
  );
}

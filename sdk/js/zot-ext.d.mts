// Types for zot-ext.mjs, so TypeScript extensions get checked:
//   import { Extension, prompt } from "./zot-ext.mjs";
// (.d.mts is the name TypeScript looks for beside an .mjs module.)
// Protocol: docs/extensions.md. Reference: docs/sdk.md.

export declare const PROTOCOL_VERSION: 1;

export type Level = "info" | "success" | "warn" | "error";
export type EventName = "session_start" | "turn_start" | "tool_call" | "turn_end" | "assistant_message";
export type Awaitable<T> = T | Promise<T>;

/** An overlay the user sees above the editor; keys go to onPanelKey. */
export interface Panel {
  id: string;
  title?: string;
  lines?: Array<string | number>;
  footer?: string;
}

/** A command's answer. */
export interface Response {
  action: "prompt" | "insert" | "display" | "noop";
  text?: string;
  error?: string;
  panel?: Panel;
}

export type Block =
  | { type: "text"; text: string }
  | { type: "image"; mime_type: string; data: string };

/** A tool's answer. */
export interface ToolResult {
  content: Block[];
  isError?: boolean;
}

/** An interceptor's answer; undefined means allow. */
export interface Decision {
  block?: boolean;
  reason?: string;
  modifiedArgs?: Record<string, unknown>;
  replaceText?: string;
}

/** An event frame as zot sends it. */
export interface ZotEvent {
  type: "event";
  event: EventName;
  step?: number;
  tool_id?: string;
  tool_name?: string;
  tool_args?: unknown;
  stop?: "end_turn" | "tool_use" | "length" | "error" | "aborted";
  /** true (with stop "end_turn") when the model declined to answer */
  refusal?: boolean;
  error?: string;
  text?: string;
}

/** hello_ack, once it arrived. */
export interface HelloAck {
  protocol_version?: number;
  zot_version?: string;
  provider?: string;
  model?: string;
  cwd?: string;
  extension_dir?: string;
  data_dir?: string;
}

export declare function prompt(text: string, panel?: Panel): Response;
export declare function insert(text: string, panel?: Panel): Response;
export declare function display(text: string, panel?: Panel): Response;
export declare function noop(panel?: Panel, error?: string): Response;

export declare function textResult(text: string, isError?: boolean): ToolResult;
export declare function errorResult(text: string): ToolResult;
export declare function imageResult(data: Uint8Array, mimeType?: string, text?: string): ToolResult;

export declare function allow(reason?: string): Decision;
export declare function block(reason?: string): Decision;
export declare function rewrite(args: Record<string, unknown>, reason?: string): Decision;
export declare function replace(text: string): Decision;

export declare class Extension {
  constructor(name: string, version?: string, options?: { failClosed?: boolean });
  readonly name: string;
  readonly version: string;
  /** hello_ack: cwd, data_dir, extension_dir, provider, model… */
  info: HelloAck;
  /** Whether a throwing interceptor blocks; defaults to the manifest's fail_closed. */
  failClosed: boolean;

  command(name: string, description: string, fn: (args: string) => Awaitable<Response | string | void>): this;
  tool(
    name: string,
    description: string,
    schema: Record<string, unknown> | undefined,
    fn: (args: Record<string, unknown>) => Awaitable<ToolResult | string | Block[] | void>,
  ): this;
  on(events: EventName | EventName[], fn: (event: ZotEvent) => Awaitable<void>): this;
  interceptToolCall(fn: (toolName: string, args: Record<string, unknown>, toolId: string) => Awaitable<Decision | void>): this;
  interceptTurnStart(fn: (step: number) => Awaitable<Decision | void>): this;
  interceptAssistantMessage(fn: (text: string) => Awaitable<Decision | string | void>): this;
  onPanelKey(fn: (panelId: string, key: string, text: string) => Awaitable<void>): this;
  onPanelClose(fn: (panelId: string) => Awaitable<void>): this;
  onShutdown(fn: () => Awaitable<void>): this;

  notify(message: string, level?: Level): void;
  clearNotes(): void;
  renderPanel(panel: Panel): void;
  closePanel(panelId: string): void;
  log(...args: unknown[]): void;

  /** Say hello, register, serve frames until shutdown, then exit. */
  run(): void;
}

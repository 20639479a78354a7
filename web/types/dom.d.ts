// Types of the dashboard's DOM helpers (static/assets/js/ui.js). Type
// checking only: nothing here is served or embedded.

/** What h() and fill() put in an element: nodes, text, nested lists; null, undefined and false are skipped. */
export type Child = Node | string | number | boolean | null | undefined | readonly Child[];

/** A value of h()'s attributes; see Attrs. */
export type AttrValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly (string | null | undefined | false)[]
  | Readonly<Record<string, string | undefined>>
  | ((ev: never) => unknown);

/**
 * h()'s attributes: class (a string or a list, falsy entries dropped),
 * dataset, on<event> handlers, properties (value, checked, selected,
 * disabled, hidden, open, indeterminate) and any other attribute as text.
 */
export interface Attrs {
  class?: string | readonly (string | null | undefined | false)[] | null;
  dataset?: Readonly<Record<string, string | undefined>>;
  onclick?: (ev: MouseEvent) => unknown;
  onchange?: (ev: Event) => unknown;
  oninput?: (ev: Event) => unknown;
  onkeydown?: (ev: KeyboardEvent) => unknown;
  onsubmit?: (ev: SubmitEvent) => unknown;
  [name: string]: AttrValue;
}

/** A choice of a select or a checks field. */
export interface FieldOption {
  value: string;
  label?: string;
}

/** field()'s options. */
export interface FieldOptions {
  /** text (default), textarea, select, checkbox, number, password, json, checks. */
  type?: 'text' | 'textarea' | 'select' | 'checkbox' | 'number' | 'password' | 'json' | 'checks';
  /** The initial value: text, a number, a boolean (checkbox), a list (checks), any JSON value (json). */
  value?: unknown;
  hint?: string | null;
  required?: boolean;
  readonly?: boolean;
  disabled?: boolean;
  placeholder?: string | null;
  rows?: number;
  mono?: boolean;
  /** The data-type formValues reads the control as; see formValues. */
  dataType?: string;
  options?: readonly FieldOption[];
  /** The text of a checks field without options. */
  empty?: string;
  step?: number | string;
  min?: number;
  max?: number;
  pattern?: string;
  omitEmpty?: boolean;
}

// Types of the dashboard's views and router (static/assets/js/app.js).
// Type checking only: nothing here is served or embedded.

/**
 * A parsed location hash: its path segments, decoded ('#/run/abc' is
 * ['run', 'abc']), and the text after '?' as query.
 */
export type Route = string[] & { query: string };

/** What the router asks of each view module. */
export interface ViewModule {
  /** Called once at start with the view's <section>. */
  mount(section: HTMLElement): void;
  /** Renders the route; an error it throws is shown in the section. */
  show(route: Route): unknown;
  /** Called when another view's section takes over. */
  hide?(): void;
}

/** An entry of the router's table: the first path segment names it. */
export interface View {
  module: ViewModule;
  /** The id of the view's <section>. */
  section: string;
  title: string;
  /** The data-nav of the header link to mark current. */
  nav: string;
}

/** Domain names and colours by domain id, for matrix rows and titles. */
export type DomainNames = Map<string, { name: string; color: string }>;

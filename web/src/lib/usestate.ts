// A view's inputs kept in its URL: the state decodes from the query string
// on load and writes it back (history.replaceState) as it changes, so that
// the address bar is always the view's shareable link.

import { useCallback, useEffect, useState } from "preact/hooks";
import { decode, encode, type FieldDef, type State, type Value } from "./query";

export function useQueryState(fields: readonly FieldDef[]): [State, (key: string, v: Value) => void, (s: State) => void] {
  const [state, setState] = useState<State>(() => decode(location.search, fields));
  useEffect(() => {
    const q = encode(state, fields);
    if (q !== location.search) history.replaceState(history.state, "", location.pathname + q);
  }, [state]);
  const set = useCallback((key: string, v: Value) => setState((s) => ({ ...s, [key]: v })), []);
  return [state, set, setState];
}

/** shareURL is the view's full URL for these inputs. */
export function shareURL(path: string, state: State, fields: readonly FieldDef[]): string {
  return location.origin + path + encode(state, fields);
}

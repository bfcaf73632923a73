import { token } from "./api";

/** useAuthRequired: the curl calls carry a token when this tab has one. */
export function useAuthRequired(): boolean {
  return token() !== "";
}

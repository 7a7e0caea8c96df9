import { useEffect, useState } from "preact/hooks";
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { call, type Session } from "./api";

export interface Ctx {
  session: Session;
  vhost: string;
  refreshMs: number;
  changes: boolean;
}
export const AppCtx = createContext<Ctx>(null as unknown as Ctx);
export const useCtx = () => useContext(AppCtx);

/** GET ``path`` now, again every refresh interval (0 pauses) and whenever ``bump`` changes. */
export function useGet<T>(path: string | null, bump = 0): { data: T | null; error: string | null } {
  const { session, refreshMs } = useCtx();
  const [state, setState] = useState<{ data: T | null; error: string | null }>({ data: null, error: null });
  useEffect(() => {
    if (path === null) return;
    let live = true;
    const load = () =>
      call<T>(session, "GET", path).then(
        (data) => live && setState({ data, error: null }),
        (error: Error) => live && setState({ data: null, error: error.message }),
      );
    void load();
    const timer = refreshMs > 0 ? setInterval(load, refreshMs) : undefined;
    return () => {
      live = false;
      if (timer) clearInterval(timer);
    };
  }, [path, bump, refreshMs, session]);
  return state;
}

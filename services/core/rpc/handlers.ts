// How a service states its RPC handlers: the service descriptor and the methods it implements.
// The gateway turns these into endpoints for every protocol; services never see the transport.
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";

/** A service's handlers as its module exports them. */
export interface ServiceHandlers<S extends DescService = DescService> {
  service: S;
  impl: Partial<ServiceImpl<S>>;
}

export function defineHandlers<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceHandlers {
  return { service, impl } as unknown as ServiceHandlers;
}

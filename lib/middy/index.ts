export * from '../lifecycle/index.js'
export { singleton } from './singleton.js'

import { scenarioOf, simulate } from './simulation.js'
const s = scenarioOf(157)
const o = await simulate(s, { keepTrace: true })

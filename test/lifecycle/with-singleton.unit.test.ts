import { withSingleton } from '../../lib/index.js'
import { type Adapter, describeSingletonBehaviour } from './behaviour.js'
import { describeHistoryBehaviour } from './history-behaviour.js'
import { describePauseBehaviour } from './pause-behaviour.js'
import { describeReplaceBehaviour } from './replace-behaviour.js'

const plain: Adapter = (body, options) => withSingleton(body, options)

describeSingletonBehaviour('withSingleton()', plain)
describePauseBehaviour('withSingleton()', plain)
describeReplaceBehaviour('withSingleton()', plain)
describeHistoryBehaviour('withSingleton()', plain)

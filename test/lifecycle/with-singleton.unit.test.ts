import { withSingleton } from '../../lib/index.js'
import { type Adapter, describeSingletonBehaviour } from './behaviour.js'

const plain: Adapter = (body, options) => withSingleton(body, options)

describeSingletonBehaviour('withSingleton()', plain)

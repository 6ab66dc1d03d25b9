"""Device farm: emulators, real phones and virtual devices behind one lease interface.

Modules are imported on demand (``from phoneenv.farm.emulator import EmulatorLauncher``); this
package itself imports nothing, so ``import phoneenv`` never pulls adb or emulator tooling in.
"""

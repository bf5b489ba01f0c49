import AppStoreDomain
import Logging
import Services

extension ResumeTokenKeyRing {
    /// What re-reads the ring file at `path` when it changes (a Kubernetes Secret update): the new keys are
    /// put in force at once; a file that fails to load leaves the keys in force (the watcher logs and counts it).
    /// Never logs a key.
    package func watching(path: String, allowReadableFile: Bool, logger: Logger) -> AccessFileWatcher.Watched {
        AccessFileWatcher.Watched(paths: [path], file: "resume_token_keys", what: "resume-token key ring") { [self] in
            let keys = try Self.load(path: path, allowReadableFile: allowReadableFile)
            replace(with: keys)
            logger.info("reloaded the resume-token key ring", metadata: ["file": "\(path)", "keys": "\(keys.count)"])
        }
    }
}

export declare const CONSOLE_SCRIPT: string;
export declare function bundleConsole(options?: { outfile?: string }): Promise<string>;
